"""The status says what the webhook is doing: whether a watcher runs, when it last heard from the mailbox.

Issue #28: `webhook show` and get_webhook_status said "active" with no watcher running, so nothing
was delivered while the status said all was well; and with no usable state folder the tool's
answer had to name the setting to change.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import error_text, structured
from watching import Operator, wait_for_status
from webhook_helpers import served_webhooks, set_columns, with_changes

from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.settings import WebhookSettings, default_store_url
from imap_mcp.server.webhooks.status import WebhookStatus

pytestmark = pytest.mark.anyio


async def status(settings: WebhookSettings) -> dict[str, Any]:
    async with served_webhooks(settings) as client:
        return structured(await client.call_tool("get_webhook_status", {}))


async def test_a_webhook_on_without_a_watcher_is_no_watcher_and_says_what_to_run(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    save_webhook()
    found = await status(hook_settings)
    assert found["state"] == "no_watcher" and found["enabled"] is True
    assert found["watcher_running"] is False and found["last_heard_at"] is None
    assert "imap-mcp watch" in found["message"]


async def test_no_watcher_wins_over_paused_and_a_watcher_makes_it_paused(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store, request: pytest.FixtureRequest
) -> None:
    save_webhook()
    set_columns(store, paused_since=1_700_000_000.0, consecutive_failures=10)
    assert (await status(hook_settings))["state"] == "no_watcher"
    request.getfixturevalue("watcher")
    found = await status(hook_settings)
    assert (found["state"], found["paused"], found["watcher_running"]) == ("paused", True, True)
    assert found["message"] is None


async def test_a_webhook_turned_off_is_disabled_whether_or_not_a_watcher_runs(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store
) -> None:
    save_webhook()
    set_columns(store, enabled=0)
    assert (await status(hook_settings))["state"] == "disabled"
    assert (await status(with_changes(hook_settings, enabled=False)))["state"] == "unavailable"


@pytest.mark.slow
async def test_a_running_watcher_is_reported_with_when_it_last_heard_from_the_mailbox(
    sqlite_operator: Operator,
) -> None:
    operator = sqlite_operator
    operator.set_webhook("https://hooks.example.net/x")
    assert operator.status().state == "no_watcher"
    operator.start_watcher()
    operator.wait_until_watching()
    running = heard_from(operator)
    assert running.state == "active" and running.watcher_running is True and running.message is None
    assert running.last_heard_at is not None
    heard = dt.datetime.fromisoformat(running.last_heard_at)
    assert heard <= dt.datetime.now(dt.UTC)
    shown = operator.run("webhook", "show").stdout
    assert '"watcher_running": true' in shown and '"state": "active"' in shown
    operator.stop_all()
    stopped = operator.status()
    assert (stopped.state, stopped.watcher_running) == ("no_watcher", False)
    assert stopped.last_heard_at is not None and dt.datetime.fromisoformat(stopped.last_heard_at) >= heard


def heard_from(operator: Operator, timeout: float = 60.0) -> WebhookStatus:
    """The status once a watcher has heard from the mailbox (right after INBOX first answers it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = wait_for_status(operator, "active")
        if found.last_heard_at is not None:
            return found
        time.sleep(0.2)
    raise AssertionError(f"no watcher heard from the mailbox within {timeout} s: {operator.status()}")


async def test_no_usable_state_folder_is_a_tool_error_naming_the_setting(tmp_path: Path) -> None:
    """The default store lives under XDG_STATE_HOME; here that is under a file, so no folder can be made."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    settings = WebhookSettings(store_url=default_store_url({"XDG_STATE_HOME": str(blocker / "state")}))
    async with served_webhooks(settings) as client:
        text = error_text(await client.call_tool("get_webhook_status", {}))
    assert "Cannot create the SQLite store" in text and "Set IMAP_MCP_STORE to" in text
    assert "XDG_STATE_HOME" in text and "Traceback" not in text
