"""The approval ledger keeps time by the store's clock (issue #38, break 4): a process whose clock is ahead (a
replica on another host, or a host whose clock was set) prunes no row before its time, so no replay runs again.

The process's clock is shifted where Python reads it (`time.time`, monkeypatch): no real part here gives one
process a clock of its own (see tests/webhooks/test_clocks.py).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from postgres import PrivatePostgres

from imap_mcp.server.store.clock import ClockRefused
from imap_mcp.server.store.database import Store
from imap_mcp.server.store.ledger import Ledger, approval_key

ACCOUNT = "demo@example.org@imap.example.org:993"
SENT = approval_key(ACCOUNT, "send_message", "identity-sent")
LATER = approval_key(ACCOUNT, "send_message", "identity-later")
#: two days: past the ledger's day of keeping
AHEAD = 2 * 24 * 3600.0


#: `python -c BEGIN_AHEAD OFFSET URL KEY`: `Ledger.begin` of KEY in a process whose wall clock is OFFSET seconds off
#: (shifted before imap-mcp is imported, as a host's clock would be); prints whether it holds the approval
BEGIN_AHEAD = (
    "import sys, time\n"
    "offset, url, key = float(sys.argv[1]), sys.argv[2], sys.argv[3]\n"
    "real = time.time\n"
    "time.time = lambda: real() + offset\n"
    "from imap_mcp.server.store.ledger import ledger_at\n"
    f"print(ledger_at(url).begin(key, {ACCOUNT!r}, 'send_message', 10.0).owned)\n"
)


def sent_once(store: Store) -> Ledger:
    """A ledger in `store` with the approval SENT done (a message sent: a replay must find it)."""
    ledger = Ledger(store)
    begun = ledger.begin(SENT, ACCOUNT, "send_message", 10.0)
    assert begun.holder is not None and ledger.advance(SENT, begun.holder, "done", {"status": "sent"})
    return ledger


def replay_finds_it_done(ledger: Ledger) -> bool:
    replayed = ledger.begin(SENT, ACCOUNT, "send_message", 10.0)
    return not replayed.owned and replayed.entry is not None and replayed.entry.state == "done"


def test_a_replica_whose_clock_is_ahead_prunes_no_row_before_its_time(postgres: PrivatePostgres) -> None:
    """PostgreSQL shared by hosts: another approval begun on a host two days ahead leaves the day-old row alone."""
    store = Store(postgres.new_database())
    ledger = sent_once(store)
    ahead = subprocess.run(
        [sys.executable, "-c", BEGIN_AHEAD, str(AHEAD), store.url, LATER],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ahead.stdout.split() == ["True"]
    assert replay_finds_it_done(ledger)


def test_a_jump_of_the_hosts_clock_is_refused_on_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite on one host: its clock set two days ahead while the process runs; nothing is pruned, and it says why."""
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    ledger = sent_once(store)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + AHEAD)
    with pytest.raises(ClockRefused, match="clock was set 172800 s ahead"):
        ledger.begin(LATER, ACCOUNT, "send_message", 10.0)
    monkeypatch.undo()
    assert replay_finds_it_done(ledger)
