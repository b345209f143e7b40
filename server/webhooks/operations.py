"""What the three tools do to an account's webhook, each in one store transaction.

A refusal is a `WebhookRefused` whose message says what to do; nothing is changed then.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from imap_mcp.server.errors import ImapMcpError
from imap_mcp.server.store.database import Store, Tx
from imap_mcp.server.webhooks.cipher import StoreCipher, Unreadable
from imap_mcp.server.webhooks.outbox import drop_queued_while_off, effective_limits, prune
from imap_mcp.server.webhooks.rows import WebhookRow, invalid_url_reason, load_row, open_endpoint
from imap_mcp.server.webhooks.settings import (
    MIN_MAX_EVENTS,
    MIN_RETENTION_SECONDS,
    WebhookSettings,
    parse_duration,
)
from imap_mcp.server.webhooks.status import LimitsStatus, WebhookStatus, read_status

SETUP_HINT = (
    "Set it up on the account page (/account; on this server the operator runs: imap-mcp webhook set --url URL)."
)


class WebhookRefused(ImapMcpError):
    """The change cannot be made as asked; nothing was changed."""


@dataclass(frozen=True)
class Keep:
    """A limit the call leaves as it is (the field was omitted)."""


KEEP = Keep()
#: a limit as asked: Keep, "default" (store the server default), or a number of seconds / events
LimitChange = Keep | Literal["default"] | int


class WebhookAccount:
    """One account's webhook in the store, as the tools and the operator command see it."""

    def __init__(self, store: Store, settings: WebhookSettings, account: str) -> None:
        self.store = store
        self.settings = settings
        self.account = account
        self.cipher = StoreCipher([key.reveal() for key in settings.store_keys])

    def status(self) -> WebhookStatus:
        with self.store.transaction() as tx:
            return read_status(tx, self.account, self.settings, self.cipher)

    def set_enabled(self, enabled: bool) -> WebhookStatus:
        with self.store.transaction() as tx:
            tx.lock_account(self.account)
            row = self._saved(tx)
            if enabled:
                self._enable(tx, row)
            else:
                self._disable(tx, row)
            return read_status(tx, self.account, self.settings, self.cipher)

    def set_limits(self, retention: LimitChange, max_events: LimitChange, reset: bool) -> LimitsStatus:
        if reset:
            retention, max_events = "default", "default"
        with self.store.transaction() as tx:
            tx.lock_account(self.account)
            row = self._saved(tx)
            new_retention = self._checked(retention, row.retention_seconds, "retention")
            new_events = self._checked(max_events, row.max_events, "max_events")
            tx.run(
                "UPDATE webhooks SET retention_seconds = ?, max_events = ? WHERE account = ?",
                new_retention,
                new_events,
                self.account,
            )
            changed = load_row(tx, self.account)
            assert changed is not None  # locked above
            pruned = prune(tx, self.account, effective_limits(changed, self.settings), time.time())
            status = read_status(tx, self.account, self.settings, self.cipher)
        return LimitsStatus(**status.model_dump(), events_pruned=pruned)

    def _saved(self, tx: Tx) -> WebhookRow:
        row = load_row(tx, self.account)
        if row is None:
            raise WebhookRefused(f"No webhook is saved for this account. {SETUP_HINT}")
        return row

    def _enable(self, tx: Tx, row: WebhookRow) -> None:
        if not self.settings.enabled:
            raise WebhookRefused(
                "Webhooks are turned off on this server (the operator set IMAP_MCP_WEBHOOKS=false), so the "
                "webhook cannot be turned on. Nothing was changed."
            )
        try:
            endpoint = open_endpoint(row, self.cipher)
        except Unreadable:
            raise WebhookRefused(
                "The saved webhook settings cannot be decrypted with this server's keys, so turning it on would "
                "deliver nothing; it stays as it was. The URL and auth header must be entered again on the "
                "account page (/account; on this server: imap-mcp webhook set)."
            ) from None
        reason = invalid_url_reason(endpoint.url)
        if reason is not None:
            raise WebhookRefused(
                f"The saved webhook URL cannot receive events ({reason}); the webhook stays off. Finish setup on "
                "the account page (/account; on this server: imap-mcp webhook set --url URL)."
            )
        if not row.enabled:
            drop_queued_while_off(tx, row)
        tx.run(
            "UPDATE webhooks SET enabled = 1, paused_since = NULL, consecutive_failures = 0, next_retry_at = NULL, "
            "off_after_sequence = NULL WHERE account = ?",
            self.account,
        )

    def _disable(self, tx: Tx, row: WebhookRow) -> None:
        off_after = (
            row.off_after_sequence if not row.enabled and row.off_after_sequence is not None else row.last_sequence
        )
        tx.run(
            "UPDATE webhooks SET enabled = 0, next_retry_at = NULL, off_after_sequence = ? WHERE account = ?",
            off_after,
            self.account,
        )

    def _checked(self, change: LimitChange, current: int | None, field: str) -> int | None:
        """The value to store for `field`: unchanged, None (server default) or a number within range."""
        if isinstance(change, Keep):
            return current
        if change == "default":
            return None
        low, high, unit = (
            (MIN_RETENTION_SECONDS, self.settings.retention_ceiling, " seconds")
            if field == "retention"
            else (MIN_MAX_EVENTS, self.settings.max_events_ceiling, " events")
        )
        if not low <= change <= high:
            extra = " (1h)" if field == "retention" else ""
            raise WebhookRefused(
                f"{field}={change}{unit} is out of range: use from {low}{unit}{extra} to {high}{unit}, this server's "
                "ceiling. The stored limits are unchanged."
            )
        return change


def limit_change(value: int | str | None, field: str) -> LimitChange:
    """A tool argument as a `LimitChange`: null or "default" is the server default; durations for retention."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "default"):
        return "default"
    if isinstance(value, int):
        return value
    if field == "max_events":
        if value.strip().isdigit():
            return int(value.strip())
        raise WebhookRefused(f"max_events={value!r} is not valid: give a whole number of events, null or 'default'.")
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise WebhookRefused(f"retention is not valid: {exc}; or null or 'default'. Nothing was changed.") from None
