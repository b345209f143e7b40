"""The store under faults, on real SQLite files and PostgreSQL: every driver error leaves as a `StoreError`, a
store that takes no writes is found before anything is asked, a store removed or made again under a running
process is refused for approvals, and a store made immutable mid-use is an error, never a SIGBUS."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from postgres import PrivatePostgres
from store_faults import immutable, locked_by_another_process

from imap_mcp.server.store import database
from imap_mcp.server.store.database import Store, StoreError, StoreReplaced
from imap_mcp.server.store.ledger import Ledger, approval_key

STALE = 10.0


def key(name: str) -> str:
    return approval_key("acct", "send_message", name)


def refusal(action: Callable[[], object]) -> StoreError:
    with pytest.raises(StoreError) as refused:
        action()
    return refused.value


class Remade:
    """A store at one URL, and a way to remove it and make a fresh one there (as another process would)."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.cluster: PrivatePostgres | None = None
        if request.param == "sqlite":
            self.url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
        else:
            self.cluster = request.getfixturevalue("postgres")
            self.url = self.cluster.new_database()

    def remove(self) -> None:
        if self.cluster is None:
            Path(self.url.removeprefix("sqlite:///")).unlink()
            return
        name = self.url.rsplit("/", 1)[1]
        with psycopg.connect(self.cluster.url(), autocommit=True) as connection:
            connection.execute(f"DROP DATABASE {name} WITH (FORCE)")
            connection.execute(f"CREATE DATABASE {name}")


@pytest.fixture(params=["sqlite", "postgresql"])
def remade(request: pytest.FixtureRequest, tmp_path: Path) -> Remade:
    return Remade(request, tmp_path)


def test_a_driver_error_leaves_the_store_as_a_store_error(remade: Remade) -> None:
    store = Store(remade.url)

    def broken() -> None:
        with store.transaction() as tx:
            tx.run("SELECT * FROM no_such_table")

    assert "no_such_table" in str(refusal(broken))
    assert store.schema_version() == len(database.MIGRATIONS)  # the next transaction runs on a new connection


def test_a_store_made_again_under_a_running_process_is_refused_for_approvals(remade: Remade) -> None:
    """Break 5 of issue #38: the process that opened the first store must not go on as if the fresh one held what
    the first recorded (on PostgreSQL the first attempt may find only its connection gone)."""
    first = Ledger(Store(remade.url))
    assert first.begin(key("before"), "acct", "send_message", STALE).owned
    remade.remove()
    fresh = Store(remade.url)
    assert fresh.identity != first.store.identity
    refusals = [refusal(lambda: first.begin(key("after"), "acct", "send_message", STALE)) for _ in range(2)]
    assert isinstance(refusals[-1], StoreReplaced)
    assert "not the one imap-mcp opened" in str(refusals[-1])
    assert isinstance(refusal(first.store.writable_identity), StoreReplaced)


def test_a_sqlite_store_removed_under_a_running_process_is_refused_and_never_made_again_empty(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    ledger = Ledger(Store(f"sqlite:///{path}"))
    path.unlink()
    assert "removed or replaced" in str(refusal(lambda: ledger.begin(key("a"), "acct", "send_message", STALE)))
    assert not path.exists()


def test_a_store_that_takes_no_writes_is_found_by_its_write_probe(remade: Remade) -> None:
    store = Store(remade.url)
    assert store.writable_identity() == store.identity
    if remade.cluster is None:
        with immutable(Path(remade.url.removeprefix("sqlite:///"))):
            assert "cannot be read or written" in str(refusal(store.writable_identity))
    else:
        with store.transaction() as tx:  # this connection's later transactions are read-only, as on a standby
            tx.run("SET SESSION default_transaction_read_only = on")
        assert "is read-only" in str(refusal(store.writable_identity))
    assert Store(remade.url).writable_identity() == store.identity


def test_a_lock_held_by_another_process_past_the_busy_timeout_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Break 3 of issue #38 at the store: sqlite3's OperationalError ("database is locked") escaped as it was."""
    monkeypatch.setattr(database, "BUSY_TIMEOUT", 0.2)
    path = tmp_path / "store.sqlite3"
    ledger = Ledger(Store(f"sqlite:///{path}"))
    with locked_by_another_process(path):
        text = str(refusal(lambda: ledger.begin(key("a"), "acct", "send_message", STALE)))
    assert "is locked: another process has held its write lock for more than 0.2 s" in text
    assert ledger.begin(key("a"), "acct", "send_message", STALE).owned


#: opens a store, records one approval, makes every file of the store immutable, records another
_IMMUTABLE_MID_USE = """
import pathlib, subprocess, sys
from imap_mcp.server.store.database import Store, StoreError
from imap_mcp.server.store.ledger import Ledger
path = pathlib.Path(sys.argv[1])
ledger = Ledger(Store(f"sqlite:///{path}"))
ledger.begin("first", "acct", "send_message", 10.0)
files = sorted(str(p) for p in path.parent.glob(path.name + "*"))
subprocess.run(["chattr", "+i", *files], check=True)
try:
    ledger.begin("second", "acct", "send_message", 10.0)
except StoreError as exc:
    print(exc, flush=True)
"""


def test_a_store_made_immutable_mid_use_is_an_error_not_a_sigbus(tmp_path: Path) -> None:
    """Break 5 of issue #38: in WAL mode the write to the mapped `-shm` file killed the process with SIGBUS."""
    path = tmp_path / "store.sqlite3"
    try:
        ran = subprocess.run(
            [sys.executable, "-c", _IMMUTABLE_MID_USE, str(path)], capture_output=True, timeout=60, check=False
        )
    finally:
        subprocess.run(["chattr", "-i", *map(str, tmp_path.iterdir())], check=True)
    assert ran.returncode == 0, ran.stderr.decode()[-2000:]
    assert "cannot be read or written" in ran.stdout.decode()


def test_a_wal_store_of_an_earlier_version_is_switched_to_a_rollback_journal_with_nothing_mapped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite3"
    earlier = sqlite3.connect(path)
    assert earlier.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    earlier.close()
    store = Store(f"sqlite:///{path}")
    with store.transaction() as tx:
        assert (tx.one("PRAGMA journal_mode"), tx.one("PRAGMA mmap_size")) == (("delete",), (0,))
    assert not Path(f"{path}-shm").exists()
