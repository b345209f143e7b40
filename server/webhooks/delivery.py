"""The delivery pump: the oldest undelivered event, POSTed signed; backoff, pause after 10 failures in a row.

At-least-once: an event counts as delivered only once the receiver answered 2xx and that was
recorded, so a watcher killed in between sends it again, with the same `webhook-id`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from imap_mcp.server.logs import get_logger
from imap_mcp.server.store.database import Store, Tx
from imap_mcp.server.webhooks.cipher import StoreCipher, Unreadable
from imap_mcp.server.webhooks.outbox import Event, next_event
from imap_mcp.server.webhooks.rows import Receiver, WebhookRow, invalid_url_reason, load_row, open_endpoint
from imap_mcp.server.webhooks.settings import FAILURE_THRESHOLD, WebhookSettings
from imap_mcp.server.webhooks.signing import signed_headers

#: seconds a receiver has to answer one delivery
POST_TIMEOUT = 10.0


@dataclass(frozen=True)
class Due:
    endpoint: Receiver
    event: Event


def due_delivery(store: Store, cipher: StoreCipher, settings: WebhookSettings, account: str, now: float) -> Due | None:
    """The event to deliver now, or None: nothing pending, turned off, paused until later, or unreadable."""
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
    return Due(endpoint, event) if invalid_url_reason(endpoint.url) is None else None


def post(client: httpx.Client, due: Due, now: float) -> str | None:
    """Deliver `due`; None when the receiver accepted it (2xx), else a short summary without any secret."""
    body = due.event.body
    headers = signed_headers(due.endpoint, due.event.webhook_id, int(now), body)
    try:
        response = client.post(due.endpoint.url, content=body.encode(), headers=headers, timeout=POST_TIMEOUT)
    except httpx.TimeoutException:
        return f"no answer within {POST_TIMEOUT:g} s"
    except httpx.ConnectError:
        return "could not connect to the receiver"
    except httpx.HTTPError as exc:
        return f"the request failed ({type(exc).__name__})"
    if 200 <= response.status_code < 300:
        return None
    if 300 <= response.status_code < 400:
        return f"HTTP {response.status_code} (redirects are not followed)"
    return f"HTTP {response.status_code}"


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


def record_failure(store: Store, settings: WebhookSettings, account: str, error: str, now: float) -> None:
    """Count a failure: back off 1, 2, 4 … s up to the retry interval; at the threshold, pause."""
    with store.transaction() as tx:
        tx.lock_account(account)
        row = load_row(tx, account)
        if row is None:
            return
        _failed(tx, row, settings, error, now)


def _failed(tx: Tx, row: WebhookRow, settings: WebhookSettings, error: str, now: float) -> None:
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
    if paused and row.paused_since is None:
        get_logger().warning("webhook: %s paused after %d failures in a row (%s)", row.account, failures, error)


def deliver_one(
    store: Store, cipher: StoreCipher, settings: WebhookSettings, account: str, client: httpx.Client
) -> bool:
    """Deliver the due event if there is one; True when an attempt was made."""
    due = due_delivery(store, cipher, settings, account, time.time())
    if due is None:
        return False
    error = post(client, due, time.time())
    if error is None:
        record_success(store, account, due.event.sequence, time.time())
    else:
        record_failure(store, settings, account, _scrubbed(error, due.endpoint), time.time())
    return True


def _scrubbed(text: str, endpoint: Receiver) -> str:
    for value in endpoint.secret_values:
        text = text.replace(value, "***")
    return text
