"""The outbox: events in sequence per account, kept within the retention and event-count limits.

An event's body carries a stranger's sender and subject, so it is stored encrypted with the store
keys (`IMAP_MCP_STORE_KEYS`, as the webhook's URL is), bound to its account and `webhook-id`. Bodies
an earlier version kept in plain text are still delivered as they are, and encrypted when the
watcher next adds events or the operator next runs `webhook set` (`seal_plain_events`).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..store.database import Tx
from .cipher import PREFIX, StoreCipher
from .rows import WebhookRow
from .settings import WebhookSettings

Source = Literal["default", "account"]


@dataclass(frozen=True)
class Limits:
    retention_seconds: int
    retention_source: Source
    max_events: int
    max_events_source: Source


def effective_limits(row: WebhookRow | None, settings: WebhookSettings) -> Limits:
    """The limits in force: the account's own (capped at today's ceiling) or the server default."""
    retention = row.retention_seconds if row is not None else None
    events = row.max_events if row is not None else None
    return Limits(
        retention_seconds=min(retention, settings.retention_ceiling)
        if retention is not None
        else settings.retention_default,
        retention_source="account" if retention is not None else "default",
        max_events=min(events, settings.max_events_ceiling) if events is not None else settings.max_events_default,
        max_events_source="account" if events is not None else "default",
    )


@dataclass(frozen=True)
class Event:
    sequence: int
    webhook_id: str
    created_at: float
    #: as stored: encrypted, or plain JSON from an earlier version (`open_body`)
    body: str


def _body_field(webhook_id: str) -> str:
    """What an event's body is bound to besides its account: a body copied into another event does not open."""
    return f"event {webhook_id}"


def open_body(event: Event, cipher: StoreCipher, account: str) -> str:
    """The event's JSON body; `Unreadable` when no key of the ring opens it."""
    if not event.body.startswith(PREFIX):
        return event.body  # kept in plain text by an earlier version
    return cipher.decrypt(event.body, account, _body_field(event.webhook_id))


def seal_plain_events(tx: Tx, cipher: StoreCipher, account: str) -> int:
    """Encrypt the account's events an earlier version kept in plain text; how many (none without a key)."""
    if not cipher.can_encrypt:
        return 0
    plain = tx.all(
        "SELECT sequence, webhook_id, body FROM webhook_events WHERE account = ? AND body NOT LIKE ?",
        account,
        PREFIX + "%",
    )
    for sequence, webhook_id, body in plain:
        tx.run(
            "UPDATE webhook_events SET body = ? WHERE account = ? AND sequence = ?",
            cipher.encrypt(str(body), account, _body_field(str(webhook_id))),
            account,
            sequence,
        )
    return len(plain)


def enqueue(tx: Tx, row: WebhookRow, payloads: Sequence[dict[str, Any]], now: float, settings: WebhookSettings) -> int:
    """Append one event per payload after the account's last sequence, encrypted with the store keys, then prune;
    returns how many were added. `Unreadable` (nothing added) when no store key is configured."""
    cipher = StoreCipher([key.reveal() for key in settings.store_keys])
    seal_plain_events(tx, cipher, row.account)
    sequence = row.last_sequence
    for payload in payloads:
        sequence += 1
        webhook_id = f"msg_{uuid.uuid4().hex}"
        body = json.dumps(
            {"type": "message.received", "timestamp": rfc3339(now), "sequence": sequence, "data": payload},
            separators=(",", ":"),
            ensure_ascii=False,
        )
        tx.run(
            "INSERT INTO webhook_events (account, sequence, webhook_id, created_at, body) VALUES (?, ?, ?, ?, ?)",
            row.account,
            sequence,
            webhook_id,
            now,
            cipher.encrypt(body, row.account, _body_field(webhook_id)),
        )
    tx.run("UPDATE webhooks SET last_sequence = ? WHERE account = ?", sequence, row.account)
    prune(tx, row.account, effective_limits(row, settings), now)
    return len(payloads)


def prune(tx: Tx, account: str, limits: Limits, now: float) -> int:
    """Delete events older than the retention, then the oldest beyond the count; how many were deleted."""
    deleted = tx.run(
        "DELETE FROM webhook_events WHERE account = ? AND created_at < ?", account, now - limits.retention_seconds
    )
    kept = tx.one("SELECT COUNT(*) FROM webhook_events WHERE account = ?", account)
    excess = int(kept[0]) - limits.max_events if kept else 0
    if excess > 0:
        deleted += tx.run(
            "DELETE FROM webhook_events WHERE account = ? AND sequence IN "
            "(SELECT sequence FROM webhook_events WHERE account = ? ORDER BY sequence LIMIT ?)",
            account,
            account,
            excess,
        )
    return deleted


def pending_count(tx: Tx, row: WebhookRow) -> int:
    found = tx.one(
        "SELECT COUNT(*) FROM webhook_events WHERE account = ? AND sequence > ?", row.account, row.delivered_sequence
    )
    return int(found[0]) if found else 0


def next_event(tx: Tx, row: WebhookRow) -> Event | None:
    """The oldest event the receiver has not accepted yet, as stored (`open_body` opens it)."""
    found = tx.one(
        "SELECT sequence, webhook_id, created_at, body FROM webhook_events WHERE account = ? AND sequence > ? "
        "ORDER BY sequence LIMIT 1",
        row.account,
        row.delivered_sequence,
    )
    return Event(int(found[0]), str(found[1]), float(found[2]), str(found[3])) if found else None


def drop_queued_while_off(tx: Tx, row: WebhookRow) -> int:
    """Delete the undelivered events queued after the webhook was turned off."""
    if row.off_after_sequence is None:
        return 0
    return tx.run(
        "DELETE FROM webhook_events WHERE account = ? AND sequence > ? AND sequence > ?",
        row.account,
        row.off_after_sequence,
        row.delivered_sequence,
    )


def rfc3339(moment: float) -> str:
    return dt.datetime.fromtimestamp(moment, dt.UTC).isoformat().replace("+00:00", "Z")
