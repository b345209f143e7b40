"""get_webhook_status, set_webhook_enabled, set_webhook_outbox_limits: the account's new-mail webhook.

No tool sets or shows the URL, the auth header or the signing secret: an assistant that reads
untrusted mail must not be able to point notifications elsewhere or read those secrets. The
operator sets them with `imap-mcp webhook set`. Neither setter asks a person (see README,
"Webhooks"): both are marked destructiveHint, and what they lose is notifications, not mail.
With IMAP_MCP_WEBHOOKS=false both setters refuse: the tools only read.

The two limits are typed `object` for pydantic, which would otherwise read `true` as 1 and word
other mistakes its own way; `limit_change` reads them strictly, so every mistake is one refusal
naming the argument, the accepted forms and the range, and the input schema (`_limit_schema`)
advertises the same forms.
"""

from __future__ import annotations

from typing import Annotated, Any

from anyio import to_thread
from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field, WithJsonSchema

from ..config import ImapSettings
from ..logs import get_logger
from ..webhooks.operations import KEEP, WebhookAccount, limit_change, webhook_store
from ..webhooks.settings import (
    MIN_MAX_EVENTS,
    MIN_RETENTION_SECONDS,
    NUMBER_TEXT_MAX,
    WebhookSettings,
)
from ..webhooks.status import EnabledStatus, LimitsStatus, WebhookStatus
from .registry import offer


def _limit_schema(minimum: int, pattern: str) -> WithJsonSchema:
    """A limit's input schema: an integer of at least `minimum` (the ceiling is the server's: see the status),
    a string matching `pattern` of at most NUMBER_TEXT_MAX characters, or null."""
    return WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": minimum},
                {"type": "string", "maxLength": NUMBER_TEXT_MAX, "pattern": pattern},
                {"type": "null"},
            ]
        }
    )


RETENTION_SCHEMA = _limit_schema(MIN_RETENTION_SECONDS, "^(default|[0-9]+[smhd]?)$")
MAX_EVENTS_SCHEMA = _limit_schema(MIN_MAX_EVENTS, "^(default|[0-9]+)$")


def register(mcp: MCPServer, settings: WebhookSettings, imap: ImapSettings) -> None:
    def opened() -> WebhookAccount:
        keys = tuple(key.reveal() for key in settings.store_keys)
        store = webhook_store(settings.store_url, imap.account, imap.legacy_account, keys)
        return WebhookAccount(store, settings, imap.account)

    async def run(method: str, *args: Any) -> Any:
        webhook = await to_thread.run_sync(opened)
        return await to_thread.run_sync(getattr(webhook, method), *args)

    @offer(
        mcp,
        "get_webhook_status",
        description=(
            "This account's new-mail webhook: active, no_watcher, paused, disabled, unreadable, not_configured or "
            "unavailable; whether a watcher is running and when it last heard from the mailbox; the delivery "
            "counters, the effective outbox limits and the server ceilings. Host only: never the URL, path, signing "
            "secret, auth header or ciphertext."
        ),
    )
    async def get_webhook_status() -> WebhookStatus:
        status: WebhookStatus = await run("status")
        return status

    @offer(
        mcp,
        "set_webhook_enabled",
        description=(
            "Turn this account's new-mail webhook on or off. Enabling clears a pause and the failure count and "
            "retries promptly; events kept while it was paused are kept. Turning it back on after it was turned off "
            "skips events queued while it was off (events_dropped says how many). Enabling unreadable settings, or "
            "an empty or invalid URL, is refused; so is any change while the operator has turned webhooks off on this "
            "server. No tool sets the URL or secrets: the operator does, on the account page."
        ),
    )
    async def set_webhook_enabled(
        enabled: Annotated[bool, Field(description="Whether new-mail alerts should be delivered.")],
    ) -> EnabledStatus:
        status: EnabledStatus = await run("set_enabled", enabled)
        get_logger().info("webhook: %s enabled=%s state=%s", imap.account, enabled, status.state)
        return status

    @offer(
        mcp,
        "set_webhook_outbox_limits",
        description=(
            "Set how long this account keeps new-mail events, and how many. Omit a field to leave it. JSON null or "
            "'default' uses the server default for that field; reset true resets both. Lowering a limit deletes the "
            "oldest kept events, including ones not delivered yet (events_pruned says how many). Needs a webhook "
            "saved on the account page, and webhooks on on this server."
        ),
    )
    async def set_webhook_outbox_limits(
        ctx: Context,
        retention: Annotated[
            object,
            RETENTION_SCHEMA,
            Field(
                description="Whole seconds, as an integer or a string of ASCII digits, or a string with one unit s, "
                "m, h or d (36h, 30d, 90m); at least 1h, at most the server's ceiling (outbox_max_retention_seconds "
                "in the status). Omit to leave the retention unchanged. JSON null or 'default' stores the server "
                "default."
            ),
        ] = None,
        max_events: Annotated[
            object,
            MAX_EVENTS_SCHEMA,
            Field(
                description="How many events to keep, as an integer or a string of ASCII digits; at least 1, at most "
                "the server's ceiling (outbox_max_events_limit in the status). Omit to leave the cap unchanged. JSON "
                "null or 'default' stores the server default."
            ),
        ] = None,
        reset: Annotated[
            bool,
            Field(
                description="When true, both limits return to the server default; retention and max_events, if "
                "given, must still be valid and are otherwise ignored."
            ),
        ] = False,
    ) -> LimitsStatus:
        given = _given_arguments(ctx)
        new_retention = limit_change(retention, "retention", settings) if "retention" in given else KEEP
        new_events = limit_change(max_events, "max_events", settings) if "max_events" in given else KEEP
        status: LimitsStatus = await run("set_limits", new_retention, new_events, reset)
        get_logger().info("webhook: %s outbox limits set, events_pruned=%d", imap.account, status.events_pruned)
        return status


def _given_arguments(ctx: Context) -> set[str]:
    """The argument names the caller sent: an omitted limit is left alone, an explicit null means the default."""
    params = ctx.request_context.params or {}
    arguments = params.get("arguments") or {}
    return set(arguments) if isinstance(arguments, dict) else set()
