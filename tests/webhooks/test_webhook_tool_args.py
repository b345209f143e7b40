"""The webhook setters' arguments, read strictly, and the setters refused while webhooks are off.

`set_webhook_outbox_limits` takes a limit as a JSON integer or a string of ASCII digits (retention
with one unit s, m, h or d), at most 20 characters, JSON null or "default"; anything else — other
scripts' digits, superscripts, full-width digits, spaces, signs, exponents, 5,000 digits, booleans —
is one tool error in the server's words naming the argument, the accepted forms and the range (never
the SDK's bare "Error executing tool"), and the stored row and its events stay exactly as they were.
The input schema the server advertises accepts and refuses the same forms. With
IMAP_MCP_WEBHOOKS=false both setters refuse and change nothing; the status still reads. The
operator's settings are read by the same parsers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from harness import error_text, structured
from jsonschema.validators import validator_for
from webhook_helpers import ACCOUNT, add_events, event_sequences, served_webhooks, set_columns, with_changes

from imap_mcp.server.setting_values import ConfigError
from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.rows import WebhookRow, load_row
from imap_mcp.server.webhooks.settings import WebhookSettings, load_webhook_settings

pytestmark = pytest.mark.anyio

LIMITS = "set_webhook_outbox_limits"

#: refused by the form alone, by the tool and by the advertised input schema alike
MALFORMED = {
    "max_events": [
        "\u00b2",  # SUPERSCRIPT TWO: str.isdigit() says yes, int() raises
        "\u0661\u0660",  # ARABIC-INDIC 10: int() reads it as 10
        "\uff11\uff10",  # FULL-WIDTH 10
        "5" * 5000,
        "5" * 21,
        "-1",
        "+10",
        "1e3",
        "0x10",
        " 10 ",
        "10 ",
        "1\n0",
        "10h",
        "ten",
        "",
        "Default",
        True,
        False,
        10.5,
        [10],
        {"count": 10},
    ],
    "retention": [
        "\u00b2h",
        "\u0661\u0660h",
        "\uff13\uff16h",  # FULL-WIDTH 36
        "5" * 5000,
        "3" * 20 + "h",
        "-3600",
        "1e4",
        " 36h ",
        "36 h",
        "36H",
        "36hours",
        "1h30m",
        "2w",
        "h",
        "",
        True,
        3600.5,
        ["36h"],
        {"hours": 36},
    ],
}
#: refused too, but where a JSON Schema validator in Python cannot follow: a number of more digits than any
#: limit is refused unread (the schema has no ceiling, which is each server's own), and Python's `$` in the
#: schema's pattern also matches before a final newline (ECMAScript's, which schemas use, does not)
MALFORMED_BEYOND_THE_SCHEMA = {"max_events": [10**30, "10\n"], "retention": [10**5000, "36h\n"]}
#: the accepted forms, and what each stores
WELL_FORMED = {
    "max_events": [(7, 7), ("7", 7), ("0042", 42), (7.0, 7), ("10000", 10000), ("1", 1)],
    "retention": [
        (3600, 3600),
        ("3600", 3600),
        ("60m", 3600),
        ("36h", 129600),
        ("30d", 2592000),
        ("2592000s", 2592000),
        (36e2, 3600),
    ],
}
#: what a refusal of each argument must say: the range, the accepted forms
NAMED = {
    "max_events": ["from 1 to 10000", "JSON integer or a string of ASCII digits 0-9"],
    "retention": ["from 3600 (1h) to 2592000", "JSON integer or a string of ASCII digits 0-9", "s, m, h or d"],
}


def cases(table: dict[str, list[Any]]) -> list[Any]:
    return [pytest.param(field, value, id=f"{field}={shortly(value)}") for field in table for value in table[field]]


def shortly(value: Any) -> str:
    """A test id for `value` (Python will not write an integer of over 4,300 digits)."""
    return "a-huge-integer" if isinstance(value, int) and value >= 10**30 else ascii(value)[:24]


def stored(store: Store) -> tuple[WebhookRow | None, list[int]]:
    """ACCOUNT's row and the sequences of its kept events: all the setters can change."""
    with store.transaction() as tx:
        row = load_row(tx, ACCOUNT)
    return row, event_sequences(store)


@pytest.fixture
def kept(hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store) -> None:
    """A saved webhook with its own limits (2 h, 50 events) and three events kept."""
    save_webhook()
    set_columns(store, retention_seconds=7200, max_events=50)
    add_events(store, hook_settings, 3, time.time())


@pytest.mark.usefixtures("kept")
@pytest.mark.parametrize(("field", "value"), cases(MALFORMED) + cases(MALFORMED_BEYOND_THE_SCHEMA))
async def test_a_malformed_limit_is_refused_in_the_servers_words_and_changes_nothing(
    hook_settings: WebhookSettings, store: Store, field: str, value: Any
) -> None:
    before = stored(store)
    async with served_webhooks(hook_settings) as client:
        text = error_text(await client.call_tool(LIMITS, {field: value}))
        assert text.startswith(f"Error executing tool {LIMITS}: {field}=")
        for words in [*NAMED[field], "at most 20 characters", "null or 'default'", "Nothing was changed"]:
            assert words in text, words
        assert len(text) < 600  # 5,000 digits are not echoed
        found = structured(await client.call_tool("get_webhook_status", {}))
    assert stored(store) == before
    assert (found["outbox_retention_seconds"], found["outbox_max_events"]) == (7200, 50)


@pytest.mark.usefixtures("kept")
async def test_a_malformed_limit_is_refused_even_beside_reset(hook_settings: WebhookSettings, store: Store) -> None:
    before = stored(store)
    async with served_webhooks(hook_settings) as client:
        text = error_text(await client.call_tool(LIMITS, {"reset": True, "max_events": "\u0661"}))
    assert "max_events='\\u0661' is not valid" in text
    assert stored(store) == before


@pytest.mark.usefixtures("kept")
@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [pytest.param(field, value, expected, id=f"{field}={value!r}") for field in WELL_FORMED
     for value, expected in WELL_FORMED[field]],
)  # fmt: skip
async def test_each_accepted_form_stores_its_number(
    hook_settings: WebhookSettings, field: str, value: Any, expected: int
) -> None:
    async with served_webhooks(hook_settings) as client:
        found = structured(await client.call_tool(LIMITS, {field: value}))
    key = "outbox_retention_seconds" if field == "retention" else "outbox_max_events"
    assert found[key] == expected and found[f"{key.removesuffix('_seconds')}_source"] == "account"


async def test_the_input_schema_refuses_and_accepts_the_same_forms(hook_settings: WebhookSettings) -> None:
    async with served_webhooks(hook_settings) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == LIMITS)
    for field in ("retention", "max_events"):
        schema = tool.input_schema["properties"][field]
        validator = validator_for(schema)(schema)
        assert not [value for value in MALFORMED[field] if validator.is_valid(value)], field
        assert all(validator.is_valid(value) for value, _ in WELL_FORMED[field]), field
        assert all(validator.is_valid(value) for value in (None, "default")), field


async def test_with_webhooks_off_both_setters_refuse_change_nothing_and_the_status_still_reads(
    hook_settings: WebhookSettings, store: Store, kept: None
) -> None:
    off = with_changes(hook_settings, enabled=False)
    before = stored(store)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("set_webhook_enabled", {"enabled": False}),
        ("set_webhook_enabled", {"enabled": True}),
        (LIMITS, {"max_events": 1}),
        (LIMITS, {"retention": "1h", "max_events": None}),
        (LIMITS, {"reset": True}),
    ]
    async with served_webhooks(off) as client:
        for tool, args in calls:
            text = error_text(await client.call_tool(tool, args))
            assert "IMAP_MCP_WEBHOOKS=false" in text and "Nothing was changed" in text, (tool, args)
        found = structured(await client.call_tool("get_webhook_status", {}))
    assert stored(store) == before
    assert found["state"] == "unavailable" and found["enabled"] is True and found["pending_events"] == 3
    assert (found["outbox_retention_seconds"], found["outbox_max_events"]) == (7200, 50)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("IMAP_MCP_WEBHOOK_MAX_EVENTS", "\u00b2"),
        ("IMAP_MCP_WEBHOOK_MAX_EVENTS_CEILING", "\u0661\u0660"),
        ("IMAP_MCP_WEBHOOK_RETENTION", "\u0663\u0666h"),
        ("IMAP_MCP_WEBHOOK_RETENTION_CEILING", "5" * 5000),
    ],
)
def test_the_operators_settings_take_ascii_digits_only(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{name}=.* is not valid: .*ASCII digits 0-9") as refused:
        load_webhook_settings({name: value})
    assert len(str(refused.value)) < 300
