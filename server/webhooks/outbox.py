"""The outbox: events in sequence per account, kept within the retention and event-count limits."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..store.database import Tx
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
    body: str


def enqueue(tx: Tx, row: WebhookRow, payloads: Sequence[dict[str, Any]], now: float, settings: WebhookSettings) -> int:
    """Append one event per payload after the account's last sequence, then prune; returns how many were added."""
    sequence = row.last_sequence
    for payload in payloads:
        sequence += 1
        body = json.dumps(
            {"type": "message.received", "timestamp": rfc3339(now), "sequence": sequence, "data": payload},
            separators=(",", ":"),
            ensure_ascii=False,
        )
        tx.run(
            "INSERT INTO webhook_events (account, sequence, webhook_id, created_at, body) VALUES (?, ?, ?, ?, ?)",
            row.account,
            sequence,
            f"msg_{uuid.uuid4().hex}",
            now,
            body,
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
    """The oldest event the receiver has not accepted yet."""
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
