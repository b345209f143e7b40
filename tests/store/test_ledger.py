"""The approval ledger on real SQLite and PostgreSQL: one holder per approval, compare-and-set steps, no resend."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from postgres import PrivatePostgres

from imap_mcp.server.store.database import MIGRATIONS, Store, StoreError
from imap_mcp.server.store.ledger import KEEP_SECONDS, Ledger, approval_key

KEY = approval_key("demo@example.org@imap.example.org:993", "send_message", "identity-1")
STALE = 10.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "sqlite":
        return Store(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    cluster: PrivatePostgres = request.getfixturevalue("postgres")
    return Store(cluster.new_database())


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(store: Store, clock: Clock) -> Ledger:
    return Ledger(store, clock)


def test_the_first_attempt_holds_the_approval_and_a_second_finds_it_running(ledger: Ledger) -> None:
    first = ledger.begin(KEY, "acct", "send_message", STALE)
    second = ledger.begin(KEY, "acct", "send_message", STALE)
    assert first.owned and not second.owned
    assert second.entry is not None and (second.entry.state, second.entry.holder) == ("running", first.holder)


def test_keys_differ_by_account_tool_and_identity() -> None:
    keys = {
        approval_key(account, tool, identity)
        for account in ("a@h:993", "a@h:994")
        for tool in ("send_message", "reply_to_message")
        for identity in ("i1", "i2")
    }
    assert len(keys) == 8


def test_a_running_row_older_than_its_staleness_is_taken_over_and_its_old_holder_can_step_no_more(
    ledger: Ledger, clock: Clock
) -> None:
    dead = ledger.begin(KEY, "acct", "move_messages", STALE)
    assert dead.holder is not None and ledger.advance(KEY, dead.holder, "running", {"floor": 42})
    clock.now += STALE + 1
    taker = ledger.begin(KEY, "acct", "move_messages", STALE)
    assert taker.owned and taker.taken_over is not None and taker.taken_over.outcome == {"floor": 42}
    assert not ledger.advance(KEY, dead.holder, "done")
    assert taker.holder is not None and ledger.advance(KEY, taker.holder, "done", {"count": 3})
    entry = ledger.entry(KEY)
    assert entry is not None and (entry.state, entry.outcome) == ("done", {"count": 3})


def test_a_hand_over_is_never_taken_over_however_old(ledger: Ledger, clock: Clock) -> None:
    sender = ledger.begin(KEY, "acct", "send_message", STALE)
    assert sender.holder is not None and ledger.advance(KEY, sender.holder, "handing_over")
    clock.now += 100 * STALE
    later = ledger.begin(KEY, "acct", "send_message", STALE)
    assert not later.owned and later.entry is not None and later.entry.state == "handing_over"
    assert later.entry.age(clock.now) >= 100 * STALE


def test_done_and_unconfirmed_rows_hold_every_later_attempt_back(ledger: Ledger, clock: Clock) -> None:
    for state in ("done", "unconfirmed"):
        key = approval_key("acct", "send_message", state)
        first = ledger.begin(key, "acct", "send_message", STALE)
        assert first.holder is not None and ledger.advance(key, first.holder, state)
        clock.now += 100 * STALE
        again = ledger.begin(key, "acct", "send_message", STALE)
        assert not again.owned and again.entry is not None and again.entry.state == state


def test_a_released_approval_runs_on_its_next_replay(ledger: Ledger) -> None:
    first = ledger.begin(KEY, "acct", "send_message", STALE)
    assert first.holder is not None and ledger.advance(KEY, first.holder, "handing_over")
    ledger.release(KEY, "someone-else")
    assert not ledger.begin(KEY, "acct", "send_message", STALE).owned
    ledger.release(KEY, first.holder)
    assert ledger.begin(KEY, "acct", "send_message", STALE).owned


def test_rows_are_pruned_after_they_are_kept(ledger: Ledger, clock: Clock) -> None:
    first = ledger.begin(KEY, "acct", "send_message", STALE)
    assert first.holder is not None and ledger.advance(KEY, first.holder, "done")
    clock.now += KEEP_SECONDS + 1
    ledger.begin(approval_key("acct", "send_message", "another"), "acct", "send_message", STALE)
    assert ledger.entry(KEY) is None


def test_attempts_racing_on_threads_give_exactly_one_holder(store: Store) -> None:
    ledger = Ledger(store)
    holders: list[bool] = []
    start = threading.Barrier(8)

    def attempt() -> None:
        start.wait()
        holders.append(ledger.begin(KEY, "acct", "send_message", STALE).owned)

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(holders) == [False] * 7 + [True]


def test_the_ledger_is_a_migration_of_its_own(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    assert Store(url).schema_version() == len(MIGRATIONS) >= 2
    with Store(url).transaction() as tx:
        assert tx.all("SELECT approval FROM approval_ledger") == []


def test_a_sqlite_store_is_private_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "state" / "imap-mcp" / "store.sqlite3"
    previous = os.umask(0)
    try:
        Store(f"sqlite:///{path}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [stat.S_IMODE(p.stat().st_mode) for p in (path.parent, path.parent.parent)] == [0o700, 0o700]


def test_a_store_folder_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(StoreError, match="Set IMAP_MCP_STORE to sqlite:///"):
        Store(f"sqlite:///{blocker / 'imap-mcp' / 'store.sqlite3'}")
