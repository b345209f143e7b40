"""Time from one clock (issue #38, break 4): leases, the outbox's retention and webhook signatures are measured in the
store's time (PostgreSQL's now(); on SQLite the host's, refused after a jump), whatever a watcher's own clock says.

No real part here can give one process a clock of its own: libfaketime (Debian's `faketime`, tried) breaks Python
3.11's timed waits (`time.sleep` fails with EINVAL, `Event.wait` never returns), and setting the host's clock would
move every other test's. So a watcher's clock is shifted where Python reads it: the watcher process gets its
`time.time` moved before imap-mcp is imported (`SHIFTED`), and the in-process tests move it with monkeypatch. That is
how a host with a wrong clock looks to imap-mcp: the wall clock off, the monotonic and boot clocks and the store's
right.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from harness import append_message, new_account
from watching import operating
from webhook_helpers import ACCOUNT, ACCOUNT_USER, LogLines, add_events, event_sequences

from imap_mcp.server.config import ImapSettings, Settings
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap.connection import connect
from imap_mcp.server.setting_values import Secret
from imap_mcp.server.store.clock import ClockRefused, store_time
from imap_mcp.server.store.database import Store, Tx
from imap_mcp.server.webhooks.cipher import StoreCipher
from imap_mcp.server.webhooks.delivery import deliver_one
from imap_mcp.server.webhooks.fleet import Fleet
from imap_mcp.server.webhooks.leases import hold_lease
from imap_mcp.server.webhooks.rows import save_endpoint
from imap_mcp.server.webhooks.settings import WebhookSettings
from imap_mcp.server.webhooks.watcher import InboxWatcher

#: the issue's watcher: eight days ahead
AHEAD = 8 * 24 * 3600.0
#: `python -c SHIFTED OFFSET ARGS...`: imap-mcp ARGS in a process whose wall clock is OFFSET seconds off
SHIFTED = (
    "import sys, time\n"
    "offset = float(sys.argv.pop(1))\n"
    "real, real_ns = time.time, time.time_ns\n"
    "time.time = lambda: real() + offset\n"
    "time.time_ns = lambda: real_ns() + int(offset * 1e9)\n"
    "from imap_mcp.server.cli import main\n"
    "main()\n"
)
REFUSED = "no lease is taken"


def now_in(store: Store) -> float:
    with store.transaction() as tx:
        return store_time(tx)


def holder_of(store: Store, account: str) -> str | None:
    with store.transaction() as tx:
        found = tx.one("SELECT holder FROM watcher_leases WHERE account = ?", account)
    return str(found[0]) if found else None


def shift_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """This process's wall clock `seconds` off (its monotonic and boot clocks, and the store's, as they are)."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + seconds)


def until(what: str, done: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)


def test_a_watcher_process_eight_days_ahead_takes_no_lease_from_a_healthy_one_and_says_so_once(
    dovecot: Dovecot, tmp_path: Path, postgres_url: str
) -> None:
    """The issue's watcher, on the store shared between hosts: it took a live lease at once; now it says why not."""
    with operating(new_account(dovecot), postgres_url, tmp_path) as operator:
        store, key = Store(postgres_url), operator.account.imap_settings().account
        with store.transaction() as tx:
            save_endpoint(tx, StoreCipher([operator.keys]), key, "http://127.0.0.1:9/hook", None)
        assert hold_lease(store, key, "healthy-host:1:watcher", now_in(store), seconds=3600)
        log = tmp_path / "ahead.log"
        with open(log, "ab") as output:
            process = subprocess.Popen(
                [sys.executable, "-c", SHIFTED, str(AHEAD), "watch", "--lease-seconds", "1.5"],
                env=operator.env(),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
        try:
            until(
                "the watcher refuses or takes the lease", lambda: REFUSED in log.read_text() or bool(taken(store, key))
            )
            time.sleep(1.2)  # two more renewals (every 0.5 s), each refused again, not said again
            holder = holder_of(store, key)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)
    said = [line for line in log.read_text().splitlines() if REFUSED in line]
    assert holder == "healthy-host:1:watcher"
    assert len(said) == 1 and "691200 s ahead of the store's (PostgreSQL now())" in said[0]
    assert operator.keys not in log.read_text()


def taken(store: Store, account: str) -> bool:
    return holder_of(store, account) not in (None, "healthy-host:1:watcher")


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> str:
    cluster = request.getfixturevalue("postgres")
    return str(cluster.new_database())


def fleet_settings(hook_settings: WebhookSettings) -> Settings:
    """ACCOUNT's settings as a watcher reads them (its IMAP server never answers: no mail is needed here)."""
    imap = ImapSettings(host="127.0.0.1", port=1, username=ACCOUNT_USER, password=Secret("unused"))
    return Settings(imap=imap, webhooks=hook_settings)


@pytest.fixture
def fleets(store: Store, hook_settings: WebhookSettings) -> Iterator[Callable[[str], Fleet]]:
    """Watchers of ACCOUNT on `store` (in this process, 1-second leases), each closed at the end."""
    made: list[Fleet] = []

    def fleet(holder: str) -> Fleet:
        made.append(Fleet(store, holder, lease_seconds=1.0))
        made[-1].deliveries.start()
        made[-1].update({ACCOUNT: fleet_settings(hook_settings)})
        return made[-1]

    yield fleet
    for each in made:
        each.close()


def test_a_watcher_whose_clock_is_off_gives_up_takes_no_lease_and_says_so_once_until_it_agrees_again(
    store: Store,
    save_webhook: Callable[..., str],
    fleets: Callable[[str], Fleet],
    server_log: LogLines,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    save_webhook()
    skewed = fleets("skewed")
    skewed.renew_and_balance()
    assert holder_of(store, ACCOUNT) == "skewed"
    shift_clock(monkeypatch, AHEAD)
    skewed.renew_and_balance()
    skewed.renew_and_balance()
    given_up = holder_of(store, ACCOUNT)
    with store.transaction() as tx:
        member = tx.one("SELECT holder FROM watchers WHERE holder = ?", "skewed")
    monkeypatch.undo()
    skewed.renew_and_balance()
    said = [line for line in server_log.lines if REFUSED in line]
    assert given_up is None and member is None  # the others share the accounts as if it were gone
    assert len(said) == 1 and "691200 s ahead" in said[0]
    assert any("agrees with the store's again" in line for line in server_log.lines)
    assert holder_of(store, ACCOUNT) == "skewed"


def test_a_renewed_lease_is_not_taken_by_another_watcher_and_is_once_it_is_no_longer_renewed(
    store: Store, save_webhook: Callable[..., str], fleets: Callable[[str], Fleet]
) -> None:
    """Leases of one second, renewed every 0.3 s for more than two of them: the second watcher never gets in."""
    save_webhook()
    first, second = fleets("first"), fleets("second")
    first.renew_and_balance()
    deadline = time.monotonic() + 2.5
    holders = set()
    while time.monotonic() < deadline:
        first.renew_and_balance()
        second.renew_and_balance()
        holders.add(holder_of(store, ACCOUNT))
        time.sleep(0.3)
    assert holders == {"first"}

    def second_takes_it() -> bool:
        second.renew_and_balance()
        return holder_of(store, ACCOUNT) == "second"

    until("the second watcher takes the lease no longer renewed", second_takes_it)


def test_a_watcher_whose_clock_is_ahead_prunes_no_undelivered_event(
    dovecot: Dovecot, store: Store, hook_settings: WebhookSettings, keys: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three events not yet delivered, a day old; the watcher, eight days ahead, finds a new message."""
    account = new_account(dovecot)
    imap = account.imap_settings()
    with store.transaction() as tx:
        save_endpoint(tx, StoreCipher(keys), imap.account, "http://127.0.0.1:9/hook", None)
    add_events(store, hook_settings, 3, now_in(store) - 24 * 3600, account=imap.account)

    def transact(work: Callable[[Tx], Any]) -> Any:
        with store.transaction() as tx:
            return work(tx)

    watcher = InboxWatcher(imap, hook_settings, transact)
    client = connect(imap)
    try:
        uidvalidity = int(client.select_folder("INBOX", readonly=True)[b"UIDVALIDITY"])
        watcher.catch_up(client, uidvalidity)  # the mark: where INBOX ends
        append_message(account, b"From: a@example.org\r\nSubject: new\r\n\r\nhello\r\n")
        shift_clock(monkeypatch, AHEAD)
        client.noop()  # Dovecot tells a session of new mail at the end of a command: the next one sees it
        if store.postgres:
            assert watcher.catch_up(client, uidvalidity) == 1  # added in the store's time
        else:
            with pytest.raises(ClockRefused, match="clock was set 691200 s ahead"):
                watcher.catch_up(client, uidvalidity)  # the host's clock jumped: nothing added, nothing pruned
    finally:
        monkeypatch.undo()
        client.logout()
    with store.transaction() as tx:
        sequences = [
            int(r[0])
            for r in tx.all("SELECT sequence FROM webhook_events WHERE account = ? ORDER BY sequence", imap.account)
        ]
    assert sequences == ([1, 2, 3, 4] if store.postgres else [1, 2, 3])


class _Recorder(ThreadingHTTPServer):
    """A receiver on loopback that keeps each request's headers (it verifies nothing: its clock is the test's)."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                recorder.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def test_a_webhook_timestamp_is_never_ahead_of_the_store_clock(
    store: Store, hook_settings: WebhookSettings, keys: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = _Recorder()
    try:
        with store.transaction() as tx:
            save_endpoint(tx, StoreCipher(keys), ACCOUNT, f"http://127.0.0.1:{recorder.server_port}/hook", None)
        add_events(store, hook_settings, 1, now_in(store))
        shift_clock(monkeypatch, AHEAD)
        cipher = StoreCipher(keys)
        if store.postgres:
            assert deliver_one(store, cipher, hook_settings, ACCOUNT)
        else:
            with pytest.raises(ClockRefused):
                deliver_one(store, cipher, hook_settings, ACCOUNT)  # the host's clock jumped: nothing signed
        monkeypatch.undo()
        after = now_in(store)
    finally:
        recorder.shutdown()
        recorder.server_close()
    stamps = [int(h["webhook-timestamp"]) for h in recorder.headers]
    if store.postgres:
        assert len(stamps) == 1 and after - 60 < stamps[0] <= after
    else:
        assert stamps == [] and event_sequences(store) == [1]
