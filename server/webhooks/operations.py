"""What the three tools do to an account's webhook, each in one store transaction.

A refusal is a `WebhookRefused` whose message says what to do; nothing is changed then.
"""

from __future__ import annotations

import contextlib
import functools
import json
from dataclasses import dataclass
from typing import Literal

from ..errors import ImapMcpError
from ..logs import get_logger
from ..store.clock import store_time
from ..store.database import Store, Tx
from .cipher import StoreCipher, Unreadable
from .outbox import drop_queued_while_off, effective_limits, prune
from .rows import WebhookRow, adopt_legacy_rows, invalid_url_reason, load_row, open_endpoint
from .settings import (
    MIN_MAX_EVENTS,
    MIN_RETENTION_SECONDS,
    NUMBER_TEXT_MAX,
    WebhookSettings,
    parse_count,
    parse_duration,
)
from .status import EnabledStatus, LimitsStatus, WebhookStatus, read_status

SETUP_HINT = (
    "Set it up on the account page (/account; on this server the operator runs: imap-mcp webhook set --url URL)."
)
READ_ONLY = (
    "Webhooks are turned off on this server (the operator set IMAP_MCP_WEBHOOKS=false), so the webhook tools only "
    "read: the webhook cannot be turned on or off and its outbox limits cannot be changed. Nothing was changed; "
    "get_webhook_status still reports it."
)


class WebhookRefused(ImapMcpError):
    """The change cannot be made as asked; nothing was changed."""


@dataclass(frozen=True)
class Keep:
    """A limit the call leaves as it is (the field was omitted)."""


KEEP = Keep()
#: a limit as asked: Keep, "default" (store the server default), or a number of seconds / events
LimitChange = Keep | Literal["default"] | int
LimitField = Literal["retention", "max_events"]
#: a JSON integer this large is refused as it is, never turned into digits (Python refuses past 4300)
_NUMBER_BOUND = 10**NUMBER_TEXT_MAX


@functools.lru_cache(maxsize=256)
def webhook_store(url: str, account: str, legacy: str, keys: tuple[str, ...] = ()) -> Store:
    """The store at `url`, opened once per process, with rows an earlier version kept under `legacy` adopted by
    `account` (`rows.adopt_legacy_rows`, which needs one of `keys` to seal their secrets again); `StoreError` when
    it cannot be opened."""
    store = Store(url)
    with store.transaction() as tx:
        tx.lock_account(legacy)
        if adopt_legacy_rows(tx, StoreCipher(list(keys)), account, legacy):
            get_logger().info("webhook rows of %s are now kept under %s (the port names it too)", legacy, account)
    return store


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

    def set_enabled(self, enabled: bool) -> EnabledStatus:
        self._writable()
        with self.store.transaction() as tx:
            tx.lock_account(self.account)
            row = self._saved(tx)
            dropped = 0
            if enabled:
                dropped = self._enable(tx, row)
            else:
                self._disable(tx, row)
            status = read_status(tx, self.account, self.settings, self.cipher)
        return EnabledStatus(**status.model_dump(), events_dropped=dropped)

    def set_limits(self, retention: LimitChange, max_events: LimitChange, reset: bool) -> LimitsStatus:
        self._writable()
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
            pruned = prune(tx, self.account, effective_limits(changed, self.settings), store_time(tx))
            status = read_status(tx, self.account, self.settings, self.cipher)
        return LimitsStatus(**status.model_dump(), events_pruned=pruned)

    def _writable(self) -> None:
        if not self.settings.enabled:
            raise WebhookRefused(READ_ONLY)

    def _saved(self, tx: Tx) -> WebhookRow:
        row = load_row(tx, self.account)
        if row is None:
            raise WebhookRefused(f"No webhook is saved for this account. {SETUP_HINT}")
        return row

    def _enable(self, tx: Tx, row: WebhookRow) -> int:
        """Turn it on; how many events queued while it was off were dropped."""
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
        dropped = drop_queued_while_off(tx, row) if not row.enabled else 0
        tx.run(
            "UPDATE webhooks SET enabled = 1, paused_since = NULL, consecutive_failures = 0, next_retry_at = NULL, "
            "off_after_sequence = NULL WHERE account = ?",
            self.account,
        )
        return dropped

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


def limit_change(value: object, field: LimitField, settings: WebhookSettings) -> Literal["default"] | int:
    """A tool argument as a limit, read strictly: JSON null or "default" is the server default; a JSON integer
    (true and false are not numbers) or a string of ASCII digits, for retention with one unit letter s, m, h or
    d; nothing else (no space, sign, exponent or other script's digits), at most `NUMBER_TEXT_MAX` characters.
    Anything else is a `WebhookRefused` naming the argument, the accepted forms and the range."""
    if value is None or value == "default":
        return "default"
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 3600.0 and 36e2 are the integer 3600
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < _NUMBER_BOUND:
        return value
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return parse_duration(value) if field == "retention" else parse_count(value)
    raise WebhookRefused(f"{field}={_quoted(value)} is not valid: {_accepted_forms(field, settings)}")


def _accepted_forms(field: LimitField, settings: WebhookSettings) -> str:
    if field == "retention":
        what = (
            f"give whole seconds from {MIN_RETENTION_SECONDS} (1h) to {settings.retention_ceiling} (this server's "
            "ceiling), as a JSON integer or a string of ASCII digits 0-9, optionally ending in s, m, h or d (e.g. "
            "36h, 30d, 90m)"
        )
    else:
        what = (
            f"give a whole number of events from {MIN_MAX_EVENTS} to {settings.max_events_ceiling} (this server's "
            "ceiling), as a JSON integer or a string of ASCII digits 0-9"
        )
    return (
        f"{what}, at most {NUMBER_TEXT_MAX} characters with no space or sign; or JSON null or 'default' for the "
        "server default. Nothing was changed."
    )


def _quoted(value: object) -> str:
    """`value` as a refusal quotes it: a string escaped to ASCII and cut after `NUMBER_TEXT_MAX` characters, a
    number as it is when it is short, anything else by its kind, so that the refusal stays short."""
    if isinstance(value, str):
        cut = f"… ({len(value)} characters)" if len(value) > NUMBER_TEXT_MAX else ""
        return ascii(value[:NUMBER_TEXT_MAX]) + cut
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return (
            repr(value) if abs(value) < _NUMBER_BOUND else f"(a number beyond {NUMBER_TEXT_MAX} digits or not finite)"
        )
    return "(a JSON array)" if isinstance(value, list) else "(a JSON object)"
