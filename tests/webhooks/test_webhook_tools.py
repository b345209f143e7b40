"""The three webhook tools, field by field and rule by rule, on a real SQLite store."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from harness import error_text, structured
from webhook_helpers import (
    ACCOUNT,
    AUTH_HEADER,
    HOOK_URL,
    LogLines,
    add_events,
    event_sequences,
    new_key,
    served_webhooks,
    set_columns,
    with_changes,
)

from imap_mcp.server.setting_values import Secret
from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.rows import load_row
from imap_mcp.server.webhooks.settings import WebhookSettings

pytestmark = pytest.mark.anyio

FIELDS = {
    "configured",
    "state",
    "enabled",
    "paused",
    "paused_since",
    "consecutive_failures",
    "failure_threshold",
    "last_error",
    "last_attempt_at",
    "last_success_at",
    "next_retry_at",
    "pending_events",
    "retry_interval_seconds",
    "watcher_running",
    "last_heard_at",
    "url_host",
    "message",
    "outbox_retention_seconds",
    "outbox_retention_source",
    "outbox_max_events",
    "outbox_max_events_source",
    "outbox_max_retention_seconds",
    "outbox_max_events_limit",
}


async def call(settings: WebhookSettings, tool: str, args: dict[str, Any] | None = None) -> Any:
    async with served_webhooks(settings) as client:
        return await client.call_tool(tool, args or {})


async def status(settings: WebhookSettings) -> dict[str, Any]:
    return structured(await call(settings, "get_webhook_status"))


async def test_not_configured_reports_every_field_with_defaults_and_ceilings(hook_settings: WebhookSettings) -> None:
    found = await status(hook_settings)
    assert set(found) == FIELDS
    assert found == {
        "configured": False,
        "state": "not_configured",
        "enabled": False,
        "paused": False,
        "paused_since": None,
        "consecutive_failures": 0,
        "failure_threshold": 10,
        "last_error": None,
        "last_attempt_at": None,
        "last_success_at": None,
        "next_retry_at": None,
        "pending_events": 0,
        "retry_interval_seconds": 300,
        "watcher_running": False,
        "last_heard_at": None,
        "url_host": None,
        "message": None,
        "outbox_retention_seconds": 7 * 86400,
        "outbox_retention_source": "default",
        "outbox_max_events": 1000,
        "outbox_max_events_source": "default",
        "outbox_max_retention_seconds": 30 * 86400,
        "outbox_max_events_limit": 10000,
    }


async def test_operator_settings_show_in_the_status(hook_settings: WebhookSettings) -> None:
    settings = with_changes(
        hook_settings,
        retry_interval=60,
        retention_default=2 * 3600,
        retention_ceiling=5 * 3600,
        max_events_default=7,
        max_events_ceiling=9,
    )
    found = await status(settings)
    assert found["retry_interval_seconds"] == 60
    assert (found["outbox_retention_seconds"], found["outbox_max_retention_seconds"]) == (7200, 18000)
    assert (found["outbox_max_events"], found["outbox_max_events_limit"]) == (7, 9)


async def test_webhooks_off_by_the_operator_is_unavailable_with_ceilings(hook_settings: WebhookSettings) -> None:
    found = await status(with_changes(hook_settings, enabled=False))
    assert found["state"] == "unavailable" and found["configured"] is False
    assert found["outbox_max_retention_seconds"] == 30 * 86400 and found["outbox_max_events_limit"] == 10000


async def test_a_saved_webhook_is_active_and_shows_only_its_host(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], watcher: str
) -> None:
    save_webhook()
    found = await status(hook_settings)
    assert found["configured"] is True and found["state"] == "active" and found["enabled"] is True
    assert found["url_host"] == "hooks.example.net"
    assert found["message"] is None and found["paused"] is False


async def test_a_saved_webhook_with_webhooks_off_is_unavailable(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    save_webhook()
    found = await status(with_changes(hook_settings, enabled=False))
    assert found["state"] == "unavailable" and found["configured"] is True


async def test_paused_reports_its_times_and_counters(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store, watcher: str
) -> None:
    save_webhook()
    set_columns(
        store,
        paused_since=1_700_000_000.0,
        consecutive_failures=12,
        last_error="HTTP 503",
        last_attempt_at=1_700_000_100.0,
        last_success_at=1_699_999_000.0,
        next_retry_at=1_700_000_400.0,
    )
    found = await status(hook_settings)
    assert found["state"] == "paused" and found["paused"] is True and found["enabled"] is True
    assert found["paused_since"] == "2023-11-14T22:13:20Z"
    assert found["consecutive_failures"] == 12 and found["last_error"] == "HTTP 503"
    assert found["last_attempt_at"] == "2023-11-14T22:15:00Z"
    assert found["last_success_at"] == "2023-11-14T21:56:40Z"
    assert found["next_retry_at"] == "2023-11-14T22:20:00Z"


async def test_pending_events_counts_what_was_not_delivered(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store
) -> None:
    save_webhook()
    add_events(store, hook_settings, 5, time.time())
    set_columns(store, delivered_sequence=2)
    assert (await status(hook_settings))["pending_events"] == 3


async def test_unreadable_nulls_host_error_and_pause_and_does_not_copy_counters(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store
) -> None:
    save_webhook(with_keys=[new_key()])
    set_columns(store, paused_since=1_700_000_000.0, consecutive_failures=11, last_error="HTTP 500", next_retry_at=1e9)
    found = await status(hook_settings)
    assert found["state"] == "unreadable" and found["configured"] is True
    assert found["url_host"] is None and found["last_error"] is None
    assert found["paused_since"] is None and found["next_retry_at"] is None and found["paused"] is False
    assert found["consecutive_failures"] == 0
    assert "/account" in found["message"] and "URL and auth header" in found["message"]


async def test_unreadable_wins_over_unavailable(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    save_webhook(with_keys=[new_key()])
    assert (await status(with_changes(hook_settings, enabled=False)))["state"] == "unreadable"


async def test_no_store_keys_makes_a_saved_row_unreadable(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    save_webhook()
    assert (await status(with_changes(hook_settings, store_keys=())))["state"] == "unreadable"


async def test_any_key_of_the_ring_decrypts(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], keys: list[str], watcher: str
) -> None:
    save_webhook()
    rotated = with_changes(hook_settings, store_keys=(Secret(new_key()), Secret(keys[0])))
    assert (await status(rotated))["state"] == "active"


# --- set_webhook_enabled ---


async def test_enabling_without_a_saved_webhook_asks_for_setup(hook_settings: WebhookSettings) -> None:
    text = error_text(await call(hook_settings, "set_webhook_enabled", {"enabled": True}))
    assert "/account" in text and "No webhook is saved" in text


async def test_disabling_turns_it_off_and_returns_every_status_field(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    save_webhook()
    found = structured(await call(hook_settings, "set_webhook_enabled", {"enabled": False}))
    assert set(found) == FIELDS | {"events_dropped"}  # no events_pruned
    assert found["events_dropped"] == 0
    assert found["state"] == "disabled" and found["enabled"] is False
    assert (await status(hook_settings))["state"] == "disabled"


async def test_enabling_a_paused_webhook_clears_the_pause_and_keeps_events(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store, watcher: str
) -> None:
    save_webhook()
    add_events(store, hook_settings, 3, time.time())
    set_columns(store, paused_since=time.time() - 60, consecutive_failures=10, next_retry_at=time.time() + 300)
    found = structured(await call(hook_settings, "set_webhook_enabled", {"enabled": True}))
    assert found["state"] == "active" and found["paused"] is False and found["paused_since"] is None
    assert found["consecutive_failures"] == 0 and found["next_retry_at"] is None  # retried promptly
    assert found["pending_events"] == 3 and event_sequences(store) == [1, 2, 3]


async def test_re_enabling_after_off_drops_only_events_queued_while_off(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store, watcher: str
) -> None:
    save_webhook()
    add_events(store, hook_settings, 2, time.time())
    structured(await call(hook_settings, "set_webhook_enabled", {"enabled": False}))
    add_events(store, hook_settings, 3, time.time())
    found = structured(await call(hook_settings, "set_webhook_enabled", {"enabled": True}))
    assert found["state"] == "active" and found["pending_events"] == 2 and found["events_dropped"] == 3
    assert event_sequences(store) == [1, 2]


async def test_enabling_twice_changes_nothing_more(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store
) -> None:
    save_webhook()
    add_events(store, hook_settings, 2, time.time())
    first = structured(await call(hook_settings, "set_webhook_enabled", {"enabled": True}))
    second = structured(await call(hook_settings, "set_webhook_enabled", {"enabled": True}))
    assert first == second and event_sequences(store) == [1, 2]


async def test_enabling_unreadable_settings_is_refused_and_disabling_still_works(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store
) -> None:
    save_webhook(with_keys=[new_key()])
    set_columns(store, enabled=0)
    text = error_text(await call(hook_settings, "set_webhook_enabled", {"enabled": True}))
    assert "cannot be decrypted" in text and "/account" in text
    with store.transaction() as tx:
        assert load_row(tx, ACCOUNT).enabled is False  # type: ignore[union-attr]
    set_columns(store, enabled=1)
    found = structured(await call(hook_settings, "set_webhook_enabled", {"enabled": False}))
    assert found["state"] == "unreadable" and found["enabled"] is False and found["url_host"] is None


@pytest.mark.parametrize("url", ["", "ftp://hooks.example.net/x", "https:///no-host"])
async def test_enabling_an_empty_or_invalid_url_is_refused_without_the_url(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], url: str
) -> None:
    save_webhook(url=url)
    structured(await call(hook_settings, "set_webhook_enabled", {"enabled": False}))
    text = error_text(await call(hook_settings, "set_webhook_enabled", {"enabled": True}))
    assert "/account" in text and "stays off" in text
    assert (url and url not in text) or not url
    assert (await status(hook_settings))["state"] == "disabled"


async def test_enabling_is_refused_when_the_operator_turned_webhooks_off(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    save_webhook()
    off = with_changes(hook_settings, enabled=False)
    structured(await call(hook_settings, "set_webhook_enabled", {"enabled": False}))
    text = error_text(await call(off, "set_webhook_enabled", {"enabled": True}))
    assert "IMAP_MCP_WEBHOOKS=false" in text
    assert (await status(hook_settings))["state"] == "disabled"


# --- set_webhook_outbox_limits ---


async def limits(settings: WebhookSettings, **args: Any) -> dict[str, Any]:
    return structured(await call(settings, "set_webhook_outbox_limits", args))


async def test_limits_need_a_saved_webhook(hook_settings: WebhookSettings) -> None:
    text = error_text(await call(hook_settings, "set_webhook_outbox_limits", {"retention": "36h"}))
    assert "/account" in text


@pytest.mark.parametrize(
    ("given", "seconds"), [("36h", 129600), ("30d", 2592000), ("90m", 5400), (7200, 7200), ("7200", 7200)]
)
async def test_retention_takes_seconds_or_durations(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], given: Any, seconds: int
) -> None:
    save_webhook()
    found = await limits(hook_settings, retention=given)
    assert set(found) == FIELDS | {"events_pruned"}
    assert found["outbox_retention_seconds"] == seconds and found["outbox_retention_source"] == "account"
    assert found["outbox_max_events_source"] == "default"  # omitted: unchanged


@pytest.mark.parametrize("back", [None, "default"])
async def test_null_or_default_stores_the_server_default(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], back: Any
) -> None:
    save_webhook()
    await limits(hook_settings, retention="2h", max_events=50)
    found = await limits(hook_settings, max_events=back)
    assert (found["outbox_max_events"], found["outbox_max_events_source"]) == (1000, "default")
    assert (found["outbox_retention_seconds"], found["outbox_retention_source"]) == (7200, "account")


async def test_reset_returns_both_to_the_default_and_ignores_the_others(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    save_webhook()
    await limits(hook_settings, retention="2h", max_events=50)
    found = await limits(hook_settings, reset=True, retention="3h", max_events=5)
    assert found["outbox_retention_source"] == "default" and found["outbox_max_events_source"] == "default"
    assert found["outbox_retention_seconds"] == 7 * 86400 and found["outbox_max_events"] == 1000


async def test_lowering_the_count_prunes_the_oldest_once(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store
) -> None:
    save_webhook()
    add_events(store, hook_settings, 8, time.time())
    set_columns(store, delivered_sequence=2)
    first = await limits(hook_settings, max_events=3)
    assert first["events_pruned"] == 5 and event_sequences(store) == [6, 7, 8]
    assert first["pending_events"] == 3
    again = await limits(hook_settings, max_events=3)
    assert again["events_pruned"] == 0 and event_sequences(store) == [6, 7, 8]
    with store.transaction() as tx:
        assert load_row(tx, ACCOUNT).delivered_sequence == 2  # type: ignore[union-attr]


async def test_lowering_the_retention_prunes_older_events(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store
) -> None:
    save_webhook()
    add_events(store, hook_settings, 4, time.time() - 3 * 3600)
    add_events(store, hook_settings, 2, time.time())
    found = await limits(hook_settings, retention="2h")
    assert found["events_pruned"] == 4 and event_sequences(store) == [5, 6]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"retention": "59m"}, "3600 seconds (1h) to 2592000 seconds"),
        ({"retention": "31d"}, "3600 seconds (1h) to 2592000 seconds"),
        ({"max_events": 0}, "1 events to 10000 events"),
        ({"max_events": 10001}, "1 events to 10000 events"),
    ],
)
async def test_out_of_range_is_rejected_naming_the_range_and_changes_nothing(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store, args: dict[str, Any], named: str
) -> None:
    save_webhook()
    await limits(hook_settings, retention="2h", max_events=50)
    add_events(store, hook_settings, 3, time.time())
    text = error_text(await call(hook_settings, "set_webhook_outbox_limits", {"max_events": 1, **args}))
    assert named in text and "unchanged" in text
    found = await status(hook_settings)
    assert (found["outbox_retention_seconds"], found["outbox_max_events"]) == (7200, 50)
    assert event_sequences(store) == [1, 2, 3]


async def test_a_bad_duration_is_refused(hook_settings: WebhookSettings, save_webhook: Callable[..., str]) -> None:
    save_webhook()
    text = error_text(await call(hook_settings, "set_webhook_outbox_limits", {"retention": "soon"}))
    assert "36h" in text


async def test_limits_work_while_the_webhook_is_off(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    """Off by the user, not by the operator (IMAP_MCP_WEBHOOKS=false: see test_webhook_tool_args)."""
    save_webhook()
    structured(await call(hook_settings, "set_webhook_enabled", {"enabled": False}))
    found = await limits(hook_settings, max_events=20)
    assert found["outbox_max_events"] == 20 and found["state"] == "disabled"


async def test_an_override_above_a_lowered_ceiling_is_the_ceiling_and_still_the_accounts(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    save_webhook()
    await limits(hook_settings, retention="20d", max_events=5000)
    lowered = with_changes(hook_settings, retention_ceiling=10 * 86400, max_events_ceiling=2000)
    found = await status(lowered)
    assert (found["outbox_retention_seconds"], found["outbox_retention_source"]) == (10 * 86400, "account")
    assert (found["outbox_max_events"], found["outbox_max_events_source"]) == (2000, "account")


async def test_annotations_mark_the_setters_destructive(hook_settings: WebhookSettings) -> None:
    async with served_webhooks(hook_settings) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    status_hints = tools["get_webhook_status"].annotations
    assert status_hints.read_only_hint is True and status_hints.destructive_hint is False  # type: ignore[union-attr]
    for name in ("set_webhook_enabled", "set_webhook_outbox_limits"):
        hints = tools[name].annotations
        assert hints.read_only_hint is False and hints.destructive_hint is True  # type: ignore[union-attr]
        assert hints.idempotent_hint is True  # type: ignore[union-attr]
    assert tools["get_webhook_status"].input_schema.get("properties", {}) == {}
    assert not {"url", "secret", "auth_header"} & set(tools["set_webhook_enabled"].input_schema["properties"])


async def test_no_result_or_log_line_holds_the_url_path_secret_or_header_value(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store, server_log: LogLines
) -> None:
    secret = save_webhook()
    add_events(store, hook_settings, 3, time.time())
    set_columns(store, last_error="HTTP 500")
    texts: list[str] = []
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_webhook_status", {}),
        ("set_webhook_enabled", {"enabled": False}),
        ("set_webhook_enabled", {"enabled": True}),
        ("set_webhook_outbox_limits", {"max_events": 2}),
        ("set_webhook_outbox_limits", {"retention": "1m"}),
        ("set_webhook_outbox_limits", {"reset": True}),
    ]
    async with served_webhooks(hook_settings) as client:
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            texts.append(str(result.content) + str(result.structured_content))
    with store.transaction() as tx:
        row = load_row(tx, ACCOUNT)
    assert row is not None
    forbidden = [
        "/private-path",
        "x7q",
        "url-query-secret",
        HOOK_URL,
        AUTH_HEADER[1],
        "Authorization",
        secret,
        secret.removeprefix("whsec_"),
        row.url_sealed,
        row.secret_sealed,
    ]
    everything = "\n".join(texts + server_log.lines)
    assert server_log.lines  # the setters did log
    for value in forbidden:
        assert value not in everything, value
