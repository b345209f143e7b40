"""Every argument error in imap-mcp's own words (issue 40 item 3, issue 39 item 7): every argument of every tool of
the registry, sent a value of the wrong type and a value its schema refuses, in both eras, is answered with one line
naming the argument, what was given and what is accepted, and never with the library's text or links.

The server is one whose IMAP and SMTP servers cannot be reached (port 1 on loopback), so a value that passes the
schema reaches no mailbox: whatever runs is refused in imap-mcp's words too, and nothing anywhere can change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from harness import CRASH, served
from mcp import Client
from mcp.types import TextContent

from imap_mcp.server.config import load_settings
from imap_mcp.server.tools.argument_errors import GIVEN_MAX
from imap_mcp.server.tools.registry import TOOL_NAMES

pytestmark = pytest.mark.anyio

UNREACHABLE = {
    "IMAP_HOST": "127.0.0.1",
    "IMAP_PORT": "1",
    "IMAP_TLS": "none",
    "IMAP_USERNAME": "nobody@example.org",
    "IMAP_PASSWORD": "not-used",
    "SMTP_HOST": "127.0.0.1",
    "SMTP_PORT": "1",
    "SMTP_TLS": "none",
    "IMAP_TIMEOUT": "2",
}
#: what the library says and links to, and a crash's bare prefix: none may be in an answer
LIBRARY_TEXT = re.compile(
    r"pydantic|validation errors? for|Input should|input_value|input_type|Field required|For further information"
    r"|https?://|\w+Arguments\b|type=\w",
    re.IGNORECASE,
)
Schema = Mapping[str, Any]


def members(node: Schema, root: Schema) -> list[Schema]:
    """The schemas a value of `node` may match ($refs followed, unions opened)."""
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    options = node.get("anyOf") or node.get("oneOf")
    return [m for option in options for m in members(option, root)] if options else [node]


def json_type(value: object) -> str:
    kinds = {bool: "boolean", int: "integer", str: "string", list: "array", dict: "object"}
    return kinds[type(value)]


def wrong_type(node: Schema, root: Schema) -> object:
    """A value of a JSON type the argument does not take (an integer counts as a number)."""
    taken = {m.get("type") for m in members(node, root)} | {"object" for m in members(node, root) if "properties" in m}
    if "number" in taken:
        taken.add("integer")
    return next(v for v in ({"wrong": "type"}, "wrong type", 12345, [{"wrong": "type"}]) if json_type(v) not in taken)


def wrong_value(node: Schema, root: Schema) -> object | None:
    """A value of a type the argument takes that its schema refuses (None: the schema refuses no such value)."""
    first = next(m for m in members(node, root) if m.get("type") != "null")
    kind = first.get("type")
    if "enum" in first:
        return "no-such-choice"
    if kind == "string":
        if first.get("format") == "date":
            return "2024-13-45"
        if first.get("minLength", 0) >= 1:
            return ""
        if "maxLength" in first:
            return "x" * (int(first["maxLength"]) + 1)
        if "pattern" in first:
            return "\x00"
        return None
    if kind == "integer":
        return int(first["minimum"]) - 1 if "minimum" in first else int(first.get("maximum", -2)) + 1
    if kind == "boolean":
        return "maybe"
    if kind == "array":
        return [] if first.get("minItems", 0) >= 1 else [{"wrong": "type"}]
    if "properties" in first and first.get("additionalProperties") is False:
        return {"no_such_key": 1}
    return None


def cases(tools: Mapping[str, Schema]) -> Iterator[tuple[str, str, str, object]]:
    """(tool, argument, which, value) for every argument of every tool: its wrong type, and its wrong value."""
    for tool, schema in tools.items():
        for argument, node in schema.get("properties", {}).items():
            yield tool, argument, "type", wrong_type(node, schema)
            value = wrong_value(node, schema)
            if value is not None:
                yield tool, argument, "value", value


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_every_argument_of_every_tool_refused_in_our_words(mode: str) -> None:
    async with served(load_settings(UNREACHABLE), mode=mode) as client:
        tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        assert sorted(tools) == sorted(TOOL_NAMES)  # every tool of the registry is offered here
        checked = 0
        for tool, argument, which, value in cases(tools):
            text = await refusal(client, tool, {argument: value})
            where = f"{tool}({argument}={value!r}) [{which}]: {text}"
            assert not LIBRARY_TEXT.search(text), where
            # the argument named: `Argument 'x'`, or by the tool's own check; a value the schema lets through may be
            # refused for another reason first (nothing to act on), which names what it is about instead
            assert which == "value" or re.search(rf"\b{argument}\b", text), where
            assert "Argument '" not in text or f"Argument '{argument}" in text, where
            assert all(len(line) < 600 for line in text.splitlines()), where
            checked += 1
    assert checked > 2 * len(tools)


async def refusal(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, result.structured_content)
    assert isinstance(result.content[0], TextContent)
    text = result.content[0].text
    assert not CRASH.fullmatch(text), (tool, arguments, text)
    return text


async def test_the_answer_names_what_was_given_cut_and_escaped_and_what_is_accepted() -> None:
    long_line = "a\x00\u202e" + "x" * 500
    async with served(load_settings(UNREACHABLE), mode="2026-07-28") as client:
        since = await refusal(client, "search_messages", {"since": "2024-13-45", "limit": 1000})
        flag = await refusal(client, "set_message_flags", {"ids": ["imap.x"], "add": ["\\Deleted"]})
        query = await refusal(client, "delete_messages", {"query": {"form": "x"}})
        long = await refusal(client, "search_messages", {"mailbox": 7, "subject": long_line})
    assert (
        "Argument 'since' was given \"2024-13-45\"; accepted: a date, YYYY-MM-DD" in since
        and "Argument 'limit' was given 1000; accepted: a whole number from 1 to 100" in since
    )
    assert "Argument 'add[0]' was given \"\\\\Deleted\": \\Deleted cannot be set or cleared here" in flag
    assert "Argument 'query.from'" not in query and "Argument 'query.form' is not one 'query' takes" in query
    subject = next(line for line in long.splitlines() if "'subject'" in line)
    assert "\\u0000\\u202e" in subject and "\x00" not in long and "\u202e" not in long
    assert "… (cut)" in subject and len(subject) < GIVEN_MAX + 300
    assert long.endswith(
        "Nothing was done: call again with the arguments corrected (the tool's input schema has them all)."
    )
