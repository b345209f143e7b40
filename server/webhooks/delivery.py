"""The delivery pump: the oldest undelivered event, POSTed signed; backoff, pause after 10 failures in a row.

At-least-once: an event counts as delivered only once the receiver answered 2xx and that was
recorded, so a watcher killed in between sends it again, with the same `webhook-id`. An attempt
has `POST_TIMEOUT` seconds in all, reads only the answer's status line and headers, and follows no
redirect (`outbound_http`). Every failed attempt is one log line: the error, the attempt's number,
when the next is due; never the URL's path or query, the auth header or the secret.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .. import outbound_http
from ..errors import ImapMcpError
from ..logs import get_logger
from ..store.clock import store_time
from ..store.database import Store, Tx
from .cipher import StoreCipher, Unreadable
from .outbox import Event, next_event, open_body
from .rows import Receiver, WebhookRow, invalid_url_reason, load_row, open_endpoint
from .settings import FAILURE_THRESHOLD, WebhookSettings
from .signing import signed_headers

#: seconds one delivery may take in all: connecting, sending, and the receiver's status line and headers
POST_TIMEOUT = 10.0


@dataclass(frozen=True)
class Due:
    endpoint: Receiver
    event: Event
    #: the event's JSON, or None when no store key opens it (the attempt fails, saying so)
    body: str | None
    #: the store's time when it was found due (`store.clock`): what the attempt is signed with
    at: float


@dataclass(frozen=True)
class Failed:
    """A failed attempt as recorded: its number among the failures in a row, when the next is due."""

    attempt: int
    wait: float
    paused: bool


def due_delivery(store: Store, cipher: StoreCipher, settings: WebhookSettings, account: str) -> Due | None:
    """The event to deliver now (by the store's time), or None: nothing pending, turned off, paused until later, or
    unreadable.

    A URL no event may go to (`invalid_url_reason`) is still due: the attempt fails, saying why.
    """
    if not settings.enabled:
        return None
    with store.transaction() as tx:
        now = store_time(tx)
        row = load_row(tx, account)
        if row is None or not row.enabled or (row.next_retry_at is not None and row.next_retry_at > now):
            return None
        event = next_event(tx, row)
    if event is None:
        return None
    try:
        endpoint = open_endpoint(row, cipher)
    except Unreadable:
        return None
    try:
        body: str | None = open_body(event, cipher, account)
    except Unreadable:
        body = None
    return Due(endpoint, event, body, now)


def post(due: Due, now: float, seconds: float = POST_TIMEOUT) -> str | None:
    """Deliver `due` within `seconds`; None when the receiver accepted it (2xx), else a short summary (secrets not
    yet hidden)."""
    reason = invalid_url_reason(due.endpoint.url)
    if reason is not None:
        return f"not sent: {reason}; set the URL again with imap-mcp webhook set"
    body = due.body
    if body is None:
        return "not sent: no key in IMAP_MCP_STORE_KEYS decrypts this event; give every watcher the same keys"
    headers = signed_headers(due.endpoint, due.event.webhook_id, int(now), body)
    try:
        answer = outbound_http.post(due.endpoint.url, body.encode(), headers, seconds=seconds, limit=0)
    except outbound_http.TooSlow:
        return f"no answer within {seconds:g} s"
    except outbound_http.Redirected as exc:
        return f"HTTP {exc.status} (redirects are not followed)"
    except outbound_http.Unreachable:
        return "could not connect to the receiver"
    except outbound_http.OutboundError as exc:
        return f"the request failed ({exc})"
    return None if 200 <= answer.status < 300 else f"HTTP {answer.status}"


def record_success(store: Store, account: str, sequence: int, now: float) -> None:
    with store.transaction() as tx:
        tx.lock_account(account)
        tx.run(
            "UPDATE webhooks SET delivered_sequence = CASE WHEN delivered_sequence > ? THEN delivered_sequence "
            "ELSE ? END, consecutive_failures = 0, paused_since = NULL, next_retry_at = NULL, last_attempt_at = ?, "
            "last_success_at = ? WHERE account = ?",
            sequence,
            sequence,
            now,
            now,
            account,
        )


def record_failure(store: Store, settings: WebhookSettings, account: str, error: str, now: float) -> Failed | None:
    """Count a failure: back off 1, 2, 4 … s up to the retry interval; at the threshold, pause.

    None when the webhook was cleared meanwhile.
    """
    with store.transaction() as tx:
        tx.lock_account(account)
        row = load_row(tx, account)
        if row is None:
            return None
        return _failed(tx, row, settings, error, now)


def _failed(tx: Tx, row: WebhookRow, settings: WebhookSettings, error: str, now: float) -> Failed:
    failures = row.consecutive_failures + 1
    paused = failures >= FAILURE_THRESHOLD
    wait = settings.retry_interval if paused else min(2 ** (failures - 1), settings.retry_interval)
    paused_since = (row.paused_since or now) if paused else None
    tx.run(
        "UPDATE webhooks SET consecutive_failures = ?, paused_since = ?, next_retry_at = ?, last_error = ?, "
        "last_attempt_at = ? WHERE account = ?",
        failures,
        paused_since,
        now + wait,
        error,
        now,
        row.account,
    )
    return Failed(failures, wait, paused)


def deliver_one(
    store: Store, cipher: StoreCipher, settings: WebhookSettings, account: str, seconds: float = POST_TIMEOUT
) -> bool:
    """Deliver the due event if there is one, in at most `seconds`; True when an attempt was made.

    Every time is the store's: the attempt is signed with the time it was found due (so a `webhook-timestamp` is never
    ahead of the store's clock, whatever this host's says), and recorded at that time plus what the monotonic clock
    counted since.
    """
    due = due_delivery(store, cipher, settings, account)
    if due is None:
        return False
    started = time.monotonic()
    error = post(due, due.at, seconds)
    now = due.at + (time.monotonic() - started)
    if error is None:
        record_success(store, account, due.event.sequence, now)
        return True
    shown = outbound_http.excerpt(error, due.endpoint.secret_values)
    failed = record_failure(store, settings, account, shown, now)
    if failed is not None:
        _log_failure(account, due.endpoint, shown, failed)
    return True


def _log_failure(account: str, endpoint: Receiver, error: str, failed: Failed) -> None:
    """One line per failed attempt: the receiver's host only (as the status shows it), never its path or query."""
    pause = "delivery paused, " if failed.paused else ""
    get_logger().warning(
        "webhook: %s delivery to %s failed (%s), attempt %d; %snext retry in %g s",
        account,
        endpoint.host or "(no host)",
        error,
        failed.attempt,
        pause,
        failed.wait,
    )


#: threads delivering at once; one account's events are never sent two at a time, so they arrive in order
DELIVERY_WORKERS = 8
#: how often a watcher looks up which of its accounts have events due (a retry, a webhook turned back on)
SCAN_INTERVAL = 1.0
#: an attempt must end this long before the lease under which it started runs out
LEASE_MARGIN = 1.0
#: the shortest attempt worth starting; with less of the lease left, the next renewal is waited for
MIN_ATTEMPT = 1.0


@dataclass(frozen=True)
class _Receiving:
    settings: WebhookSettings
    cipher: StoreCipher


class Deliveries:
    """Delivers the events of the accounts a watcher holds: `workers` threads, one account at a time each.

    An account is queued when its watcher added events (`due`), and by a look-up every `SCAN_INTERVAL` for
    those with events due (retries, events added before this watcher took the account). An attempt never
    outlives the lease that allowed it (`lease_left`): it is given the lease's remaining time, less a margin,
    so a watcher that takes the account over after the lease ran out never sends what this one is still sending.
    """

    def __init__(
        self, store: Store, holder: str, lease_left: Callable[[str], float], workers: int = DELIVERY_WORKERS
    ) -> None:
        self.store = store
        self.holder = holder
        self._lease_left = lease_left
        self._changed = threading.Condition()
        self._accounts: dict[str, _Receiving] = {}
        self._queue: deque[str] = deque()
        self._queued: set[str] = set()
        self._busy: set[str] = set()
        self._again: set[str] = set()
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, name=f"deliver-{n}", daemon=True) for n in range(workers)
        ] + [threading.Thread(target=self._scan, name="deliver-scan", daemon=True)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def add(self, account: str, settings: WebhookSettings) -> None:
        """Deliver the account's events from now on (with these settings), starting with those already due."""
        receiving = _Receiving(settings, StoreCipher([key.reveal() for key in settings.store_keys]))
        with self._changed:
            self._accounts[account] = receiving
            self._enqueue(account)

    def remove(self, account: str) -> None:
        """Start no more attempts for the account (one in flight ends on its own: `busy`)."""
        with self._changed:
            self._accounts.pop(account, None)

    def busy(self, account: str) -> bool:
        with self._changed:
            return account in self._busy

    def due(self, account: str) -> None:
        with self._changed:
            if account in self._accounts:
                self._enqueue(account)

    def stop(self, timeout: float) -> None:
        """Start no more attempts and wait (up to `timeout`) for those in flight."""
        self._stopping.set()
        with self._changed:
            self._accounts.clear()
            self._changed.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _enqueue(self, account: str) -> None:
        """Queue `account` for an attempt; call with `_changed` held."""
        if account in self._busy:
            self._again.add(account)
        elif account not in self._queued:
            self._queued.add(account)
            self._queue.append(account)
            self._changed.notify()

    def _next(self) -> tuple[str, _Receiving] | None:
        """The next account to attempt and how, or None once stopping."""
        with self._changed:
            while not self._stopping.is_set():
                if not self._queue:
                    self._changed.wait()
                    continue
                account = self._queue.popleft()
                self._queued.discard(account)
                receiving = self._accounts.get(account)
                if receiving is not None:
                    self._busy.add(account)
                    return account, receiving
        return None

    def _work(self) -> None:
        while (found := self._next()) is not None:
            account, receiving = found
            attempted = False
            try:
                attempted = self._attempt(account, receiving)
            finally:
                with self._changed:
                    self._busy.discard(account)
                    again = account in self._again
                    self._again.discard(account)
                    if (attempted or again) and account in self._accounts:
                        self._enqueue(account)  # more may be due; one attempt each, in turn with the others
                    self._changed.notify_all()

    def _attempt(self, account: str, receiving: _Receiving) -> bool:
        budget = min(POST_TIMEOUT, self._lease_left(account) - LEASE_MARGIN)
        if budget < MIN_ATTEMPT:
            return False
        try:
            return deliver_one(self.store, receiving.cipher, receiving.settings, account, budget)
        except Exception as exc:  # the store failed (a StoreError; any other error is logged alike): the scan retries
            get_logger().warning("watch: %s delivery skipped (%s)", account, _reason(exc))
            return False

    def _scan(self) -> None:
        while not self._stopping.wait(SCAN_INTERVAL):
            with self._changed:
                if not self._accounts:
                    continue  # none held (or this watcher's clock is refused): nothing to look up
            try:
                with self.store.transaction() as tx:
                    found = tx.all(_DUE, self.holder, store_time(tx))
            except Exception as exc:
                get_logger().warning("watch: looking up due events failed (%s)", _reason(exc))
                continue
            for (account,) in found:
                self.due(str(account))


#: the accounts of a holder with events to deliver now (`webhooks_pending` finds those with any)
_DUE = (
    "SELECT w.account FROM webhooks w JOIN watcher_leases l ON l.account = w.account WHERE l.holder = ? "
    "AND w.last_sequence > w.delivered_sequence AND w.enabled = 1 AND (w.next_retry_at IS NULL OR w.next_retry_at <= ?)"
)


def _reason(exc: Exception) -> str:
    """What failed, for a log line: an error of ours says it in words; any other only its type (it may quote data)."""
    return str(exc) if isinstance(exc, ImapMcpError) else type(exc).__name__
