"""`imap-mcp watch` for many accounts (issue #32): watchers share them, on SQLite and PostgreSQL.

Real Dovecot users in one accounts file, a real receiver on loopback (a signing secret per
account), watcher processes with 3-second leases. The tests wait on what the store and the
receiver show, never on the clock; every message appended must arrive exactly once, whoever
held its account when it arrived (webhook-id census).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import append_message, new_account
from receiver import Receiver
from watching import FleetOperator, census, fleet_operating

from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.store.database import Store

pytestmark = pytest.mark.slow

LEASE = ("--lease-seconds", "3")
NAMES = ("a0", "a1", "a2", "a3")


@pytest.fixture
def fleet(dovecot: Dovecot, tmp_path: Path, store_url: str) -> Iterator[FleetOperator]:
    """Four accounts, all in the accounts file, with a store of each kind; retries every second."""
    accounts = {name: new_account(dovecot) for name in NAMES}
    with fleet_operating(accounts, store_url, tmp_path, IMAP_MCP_WEBHOOK_RETRY_INTERVAL="1") as operator:
        yield operator


def mail(round_: int) -> bytes:
    return (
        f"From: sender@example.org\r\nTo: someone@example.org\r\nSubject: round {round_}\r\n"
        f"Message-ID: <r{round_}.{time.time_ns()}@example.org>\r\n\r\nhello\r\n"
    ).encode()


def append_to(fleet: FleetOperator, names: tuple[str, ...], round_: int) -> set[tuple[str, int]]:
    """One message in each account's INBOX; (store key, uid) of each."""
    return {(fleet.identity(n), append_message(fleet.accounts[n], mail(round_))) for n in names}


def count(fleet: FleetOperator, query: str) -> int:
    with Store(fleet.store_url).transaction() as tx:
        found = tx.one(query)
    return int(found[0]) if found else 0


def watching_all(fleet: FleetOperator, names: tuple[str, ...]) -> None:
    """Until every account's INBOX is watched (its mark is set: mail appended after this is new)."""
    fleet.wait_for(
        f"{len(names)} INBOXes watched", lambda: count(fleet, "SELECT COUNT(*) FROM mailbox_marks") >= len(names)
    )


def delivered_once(fleet: FleetOperator, receiver: Receiver, expected: set[tuple[str, int]]) -> None:
    """Until the receiver has every expected message and the store has recorded them all; then each message
    arrived once, with one webhook-id, and nothing else arrived."""
    deliveries = receiver.wait_for(len(expected), timeout=120)
    fleet.wait_for(
        "every delivery recorded",
        lambda: count(fleet, "SELECT COUNT(*) FROM webhooks WHERE last_sequence > delivered_sequence") == 0,
    )
    found = census(receiver.wait_for(len(deliveries)))
    assert set(found) == expected
    assert [key for key, ids in found.items() if len(ids) != 1] == []
    assert receiver.refused == 0


def test_watchers_share_the_accounts_rebalance_when_one_joins_and_take_over_a_dead_ones(fleet: FleetOperator) -> None:
    with Receiver("") as receiver:
        fleet.set_webhooks(receiver, *NAMES)
        first = fleet.start_watcher(*LEASE)
        fleet.wait_for("the first watcher holds every account", lambda: len(fleet.held_by(first)) == 4)
        watching_all(fleet, NAMES)
        expected = append_to(fleet, NAMES, 1)
        second = fleet.start_watcher(*LEASE)
        expected |= append_to(fleet, NAMES, 2)  # while they share the accounts out
        fleet.wait_for("two accounts each", lambda: sorted(Counter(fleet.holders().values()).values()) == [2, 2])
        expected |= append_to(fleet, NAMES, 3)
        delivered_once(fleet, receiver, expected)
        taken_over = fleet.held_by(first)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        expected |= append_to(fleet, NAMES, 4)  # two of them while nobody holds their lease
        fleet.wait_for("the second watcher holds every account", lambda: len(fleet.held_by(second)) == 4)
        delivered_once(fleet, receiver, expected)
    logged = "\n".join(fleet.log_lines())
    assert "given up (another watcher takes it over)" in logged
    assert len(taken_over) == 2 and all(f"watch: {account} active" in logged for account in taken_over)


def test_max_accounts_bounds_a_watcher_and_one_that_stops_gives_its_accounts_up_at_once(
    fleet: FleetOperator,
) -> None:
    with Receiver("") as receiver:
        fleet.set_webhooks(receiver, *NAMES)
        small = fleet.start_watcher("--max-accounts", "1", *LEASE)
        big = fleet.start_watcher(*LEASE)
        fleet.wait_for("one and three", lambda: (len(fleet.held_by(small)), len(fleet.held_by(big))) == (1, 3))
        watching_all(fleet, NAMES)
        big.send_signal(signal.SIGTERM)
        assert big.wait(timeout=60) == 0
        left = fleet.holders()  # right away: the leases went with it, none had to run out
        assert list(left.values()) == [str(small.pid)]
        [kept] = left
        name = next(n for n in NAMES if fleet.identity(n) == kept)
        expected = append_to(fleet, (name,), 1)
        delivered_once(fleet, receiver, expected)
        assert fleet.holders() == left  # still bounded: the three others wait for a watcher with room
        third = fleet.start_watcher(*LEASE)
        fleet.wait_for("the new watcher takes the three", lambda: len(fleet.held_by(third)) == 3)
        others = tuple(n for n in NAMES if n != name)
        expected |= append_to(fleet, others, 2)
        delivered_once(fleet, receiver, expected)


def test_the_accounts_file_is_reread_when_it_changes_and_on_sighup(fleet: FleetOperator) -> None:
    with Receiver("") as receiver:
        fleet.set_webhooks(receiver, *NAMES[:3])
        fleet.write_accounts("a0", "a1")
        watcher = fleet.start_watcher(*LEASE)

        def holds(*names: str) -> bool:
            return fleet.held_by(watcher) == {fleet.identity(n) for n in names}

        fleet.wait_for("a0 and a1 watched", lambda: holds("a0", "a1"))
        fleet.write_accounts("a1", "a2")  # the file changes: a2 added, a0 removed
        fleet.wait_for("a1 and a2 watched, a0 given up", lambda: holds("a1", "a2"))
        assert fleet.identity("a0") not in fleet.holders()
        watching_all(fleet, ("a0", "a1", "a2"))
        expected = append_to(fleet, ("a1", "a2"), 1)
        delivered_once(fleet, receiver, expected)
        fleet.write_accounts("a1", "a2", extra="[accounts.broken\n")
        fleet.wait_for("the bad file refused", lambda: any("not reloaded" in line for line in fleet.log_lines()))
        assert holds("a1", "a2")
        fleet.write_accounts("a1", "a2")
        fleet.wait_for("the good file read again", lambda: "\n".join(fleet.log_lines()).count("reloaded (") >= 2)
        quietly_changed(
            fleet.file,
            fleet.file.read_text()
            .replace(fleet.accounts["a1"].username, fleet.accounts["a0"].username)
            .replace("[accounts.a1]", "[accounts.a0]"),
        )
        watcher.send_signal(signal.SIGHUP)
        fleet.wait_for("a0 and a2 watched after SIGHUP", lambda: holds("a0", "a2"))
        expected |= append_to(fleet, ("a0", "a2"), 2)
        delivered_once(fleet, receiver, expected)
    logged = "\n".join(fleet.log_lines())
    assert f"watch: {fleet.identity('a0')} given up (it left the accounts file)" in logged
    assert f"watch: {fleet.identity('a1')} given up (it left the accounts file)" in logged
    assert "is not valid TOML" in logged
    assert "accounts file reloaded (SIGHUP): added a0; removed a1" in logged


def quietly_changed(path: Path, text: str) -> None:
    """Write `path` in place (same inode, same size here), then give it back its modification time: a change the
    file's polling cannot see, only SIGHUP."""
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
