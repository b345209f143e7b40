"""What get_webhook_status reports: the state, the watcher, the delivery counters, the outbox limits and ceilings;
no secret.

A webhook that is on but has no watcher (`imap-mcp watch` holds a lease in the store while it runs,
`leases`) delivers nothing: its state is `no_watcher`, never `active`, and the message says what to run.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..store.clock import store_time
from ..store.database import Tx
from .cipher import StoreCipher, Unreadable
from .outbox import effective_limits, pending_count, rfc3339
from .rows import WebhookRow, load_row, open_endpoint
from .settings import FAILURE_THRESHOLD, WebhookSettings

State = Literal["active", "no_watcher", "paused", "disabled", "unreadable", "not_configured", "unavailable"]
UNREADABLE_MESSAGE = (
    "The saved webhook settings cannot be decrypted with the keys this server has (IMAP_MCP_STORE_KEYS). "
    "Ask the operator to enter the URL and auth header again on the account page (/account; on this "
    "server: imap-mcp webhook set)."
)
NO_WATCHER_MESSAGE = (
    "The webhook is on, but no watcher is running for this account, so new mail is neither turned into events nor "
    "delivered. Ask the operator to start one: imap-mcp watch (with --account NAME on a server of several accounts)."
)


class WebhookStatus(BaseModel):
    configured: bool = Field(description="Whether a webhook has been saved.")
    state: State = Field(
        description="active (enabled, a watcher running, delivering), no_watcher (enabled, but no watcher is "
        "running: nothing is watched or delivered until the operator runs imap-mcp watch), paused (enabled, backing "
        "off after failures), disabled (turned off), unreadable (saved, but no configured key can decrypt it), "
        "not_configured, or unavailable (the operator set IMAP_MCP_WEBHOOKS=false: the setters refuse). unreadable "
        "wins over unavailable, no_watcher over paused."
    )
    enabled: bool = Field(description="Whether the user has turned delivery on.")
    paused: bool = Field(description="Whether repeated failures are pausing delivery.")
    paused_since: str | None = Field(description="When the pause began, RFC 3339, or null.")
    consecutive_failures: int = Field(description="Failed deliveries in a row.")
    failure_threshold: int = Field(description="Failures in a row after which delivery pauses (10).")
    last_error: str | None = Field(description="The last failure's summary, with secrets removed, or null.")
    last_attempt_at: str | None = Field(description="When a delivery was last attempted, RFC 3339, or null.")
    last_success_at: str | None = Field(description="When a delivery last succeeded, RFC 3339, or null.")
    next_retry_at: str | None = Field(description="When the next attempt is due, RFC 3339, or null.")
    pending_events: int = Field(description="Events still waiting to be delivered.")
    retry_interval_seconds: int = Field(
        description="Seconds between attempts while paused, and the longest wait before a pause."
    )
    watcher_running: bool = Field(
        description="Whether a watcher (imap-mcp watch) holds this account's lease now; without one, new mail is "
        "neither turned into events nor delivered."
    )
    last_heard_at: str | None = Field(
        description="When a watcher last heard from the mailbox (INBOX answered), RFC 3339, or null if never."
    )
    url_host: str | None = Field(description="Host of the endpoint, or null; never the path or query.")
    message: str | None = Field(description="When state is unreadable or no_watcher, what to do; null otherwise.")
    outbox_retention_seconds: int = Field(description="How long events are kept, in seconds.")
    outbox_retention_source: Literal["default", "account"]
    outbox_max_events: int = Field(description="How many events are kept, delivered or not.")
    outbox_max_events_source: Literal["default", "account"]
    outbox_max_retention_seconds: int = Field(description="Longest retention this server allows an account to set.")
    outbox_max_events_limit: int = Field(description="Most events one account may keep.")


class LimitsStatus(WebhookStatus):
    events_pruned: int = Field(description="How many oldest events this call deleted.")


class EnabledStatus(WebhookStatus):
    events_dropped: int = Field(
        description="How many events queued while the webhook was off this call deleted: turning it back on skips "
        "them (0 when it was not off)."
    )


def _time(moment: float | None) -> str | None:
    return rfc3339(moment) if moment is not None else None


def _watcher(tx: Tx, account: str, now: float) -> tuple[bool, float | None]:
    """Whether a watcher holds the account's lease at `now`, and when one last heard from the mailbox."""
    lease = tx.one("SELECT expires_at FROM watcher_leases WHERE account = ?", account)
    mark = tx.one("SELECT MAX(last_heard_at) FROM mailbox_marks WHERE account = ?", account)
    heard = mark[0] if mark is not None else None
    return lease is not None and float(lease[0]) > now, float(heard) if heard is not None else None


def read_status(tx: Tx, account: str, settings: WebhookSettings, cipher: StoreCipher) -> WebhookStatus:
    row = load_row(tx, account)
    limits = effective_limits(row, settings)
    running, heard = _watcher(tx, account, store_time(tx))
    common: dict[str, Any] = {
        "watcher_running": running,
        "last_heard_at": _time(heard),
        "failure_threshold": FAILURE_THRESHOLD,
        "retry_interval_seconds": settings.retry_interval,
        "outbox_retention_seconds": limits.retention_seconds,
        "outbox_retention_source": limits.retention_source,
        "outbox_max_events": limits.max_events,
        "outbox_max_events_source": limits.max_events_source,
        "outbox_max_retention_seconds": settings.retention_ceiling,
        "outbox_max_events_limit": settings.max_events_ceiling,
    }
    if row is None:
        return WebhookStatus(
            configured=False,
            state="not_configured" if settings.enabled else "unavailable",
            enabled=False,
            paused=False,
            paused_since=None,
            consecutive_failures=0,
            last_error=None,
            last_attempt_at=None,
            last_success_at=None,
            next_retry_at=None,
            pending_events=0,
            url_host=None,
            message=None,
            **common,
        )
    pending = pending_count(tx, row)
    try:
        host = open_endpoint(row, cipher).host
    except Unreadable:
        return WebhookStatus(
            configured=True,
            state="unreadable",
            enabled=row.enabled,
            paused=False,
            paused_since=None,
            consecutive_failures=0,
            last_error=None,
            last_attempt_at=_time(row.last_attempt_at),
            last_success_at=_time(row.last_success_at),
            next_retry_at=None,
            pending_events=pending,
            url_host=None,
            message=UNREADABLE_MESSAGE,
            **common,
        )
    state = _readable_state(row, settings, running)
    return WebhookStatus(
        configured=True,
        state=state,
        enabled=row.enabled,
        paused=row.paused,
        paused_since=_time(row.paused_since),
        consecutive_failures=row.consecutive_failures,
        last_error=row.last_error,
        last_attempt_at=_time(row.last_attempt_at),
        last_success_at=_time(row.last_success_at),
        next_retry_at=_time(row.next_retry_at) if row.enabled and settings.enabled else None,
        pending_events=pending,
        url_host=host,
        message=NO_WATCHER_MESSAGE if state == "no_watcher" else None,
        **common,
    )


def _readable_state(row: WebhookRow, settings: WebhookSettings, watcher_running: bool) -> State:
    if not settings.enabled:
        return "unavailable"
    if not row.enabled:
        return "disabled"
    if not watcher_running:
        return "no_watcher"
    return "paused" if row.paused else "active"
