"""The delivery pump: the oldest undelivered event, POSTed signed; backoff, pause after 10 failures in a row.

At-least-once: an event counts as delivered only once the receiver answered 2xx and that was
recorded, so a watcher killed in between sends it again, with the same `webhook-id`. An attempt
has `POST_TIMEOUT` seconds in all, reads only the answer's status line and headers, and follows no
redirect (`outbound_http`). Every failed attempt is one log line: the error, the attempt's number,
when the next is due; never the URL's path or query, the auth header or the secret.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import outbound_http
from ..logs import get_logger
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


@dataclass(frozen=True)
class Failed:
    """A failed attempt as recorded: its number among the failures in a row, when the next is due."""

    attempt: int
    wait: float
    paused: bool


def due_delivery(store: Store, cipher: StoreCipher, settings: WebhookSettings, account: str, now: float) -> Due | None:
    """The event to deliver now, or None: nothing pending, turned off, paused until later, or unreadable.

    A URL no event may go to (`invalid_url_reason`) is still due: the attempt fails, saying why.
    """
    if not settings.enabled:
        return None
    with store.transaction() as tx:
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
    return Due(endpoint, event, body)


def post(due: Due, now: float) -> str | None:
    """Deliver `due`; None when the receiver accepted it (2xx), else a short summary (secrets not yet hidden)."""
    reason = invalid_url_reason(due.endpoint.url)
    if reason is not None:
        return f"not sent: {reason}; set the URL again with imap-mcp webhook set"
    body = due.body
    if body is None:
        return "not sent: no key in IMAP_MCP_STORE_KEYS decrypts this event; give every watcher the same keys"
    headers = signed_headers(due.endpoint, due.event.webhook_id, int(now), body)
    try:
        answer = outbound_http.post(due.endpoint.url, body.encode(), headers, seconds=POST_TIMEOUT, limit=0)
    except outbound_http.TooSlow:
        return f"no answer within {POST_TIMEOUT:g} s"
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


def deliver_one(store: Store, cipher: StoreCipher, settings: WebhookSettings, account: str) -> bool:
    """Deliver the due event if there is one; True when an attempt was made."""
    due = due_delivery(store, cipher, settings, account, time.time())
    if due is None:
        return False
    error = post(due, time.time())
    if error is None:
        record_success(store, account, due.event.sequence, time.time())
        return True
    shown = outbound_http.excerpt(error, due.endpoint.secret_values)
    failed = record_failure(store, settings, account, shown, time.time())
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
