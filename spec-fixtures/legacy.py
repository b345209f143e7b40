"""Fixtures for the 2025-11-25 (session) wire: server-to-client requests, logging level, subscriptions.

These push real `sampling/createMessage` and `elicitation/create` requests over the session's
back channel, so they only work for a legacy client with a stateful SSE session. On 2026-07-28
the SDK has no back channel and the tools answer with an isError result, which is correct:
the modern equivalents are the `input_required` fixtures.
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    EmptyResult,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field

WATCHED_URI = "test://watched-resource"


class _Reply(BaseModel):
    response: str = Field(description="The user's reply")


class _Defaults(BaseModel):
    """One field per primitive type, each with a default (SEP-1034)."""

    name: str = Field(default="John Doe", description="Name")
    age: int = Field(default=30, description="Age in years")
    score: float = Field(default=95.5, description="Score")
    status: str = Field(
        default="active",
        description="Account status",
        json_schema_extra={"enum": ["active", "inactive", "pending"]},
    )
    verified: bool = Field(default=True, description="Whether the account is verified")


def _choices(*pairs: tuple[str, str]) -> list[Any]:  # Any: pydantic wants its JSON type, which is invariant
    return [{"const": value, "title": title} for value, title in pairs]


class _EnumShapes(BaseModel):
    """The five enum shapes of SEP-1330."""

    untitledSingle: str = Field(description="Plain enum", json_schema_extra={"enum": ["red", "green", "blue"]})
    titledSingle: str = Field(
        description="Titled single choice",
        json_schema_extra={"oneOf": _choices(("s", "Small"), ("l", "Large"))},
    )
    legacyEnum: str = Field(
        description="Deprecated enumNames form",
        json_schema_extra={"enum": ["asc", "desc"], "enumNames": ["Ascending", "Descending"]},
    )
    untitledMulti: list[str] = Field(
        description="Plain multi-select",
        json_schema_extra={"items": {"type": "string", "enum": ["a", "b", "c"]}},
    )
    titledMulti: list[str] = Field(
        description="Titled multi-select",
        json_schema_extra={"items": {"anyOf": _choices(("x", "Option X"), ("y", "Option Y"))}},
    )


async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model through the session back channel and echoes its answer."""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,  # keeps the request on this call's SSE stream
    )
    text = result.content.text if result.content.type == "text" else "(non-text reply)"
    return f"LLM response: {text}"


async def _elicit_summary(ctx: Context, message: str, schema: type[BaseModel]) -> str:
    answer = await ctx.elicit(message=message, schema=schema)
    content = answer.data.model_dump_json() if answer.action == "accept" else "{}"
    return f"action={answer.action}, content={content}"


async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user through the session back channel."""
    return "User response: " + await _elicit_summary(ctx, message, _Reply)


async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields all carry defaults."""
    return "Elicitation result: " + await _elicit_summary(ctx, "Confirm the defaults", _Defaults)


async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits a form with every enum shape."""
    return "Elicitation result: " + await _elicit_summary(ctx, "Pick some values", _EnumShapes)


def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "watched resource content"


async def _set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


async def _subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
    return EmptyResult()


async def _unsubscribe(ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams) -> EmptyResult:
    return EmptyResult()


_LEGACY_HANDLERS: tuple[tuple[str, type[Any], Any], ...] = (
    ("logging/setLevel", SetLevelRequestParams, _set_level),
    ("resources/subscribe", SubscribeRequestParams, _subscribe),
    ("resources/unsubscribe", UnsubscribeRequestParams, _unsubscribe),
)


def _add_missing_handlers(mcp: MCPServer) -> None:
    """Serve the legacy-only methods the suite probes, unless the real server already does.

    MCPServer has no public hook for them, so this goes through the low-level server. The SDK
    answers them with 404/-32601 on the 2026-07-28 wire whatever is registered here.
    """
    lowlevel = mcp._lowlevel_server
    for method, params_type, handler in _LEGACY_HANDLERS:
        if lowlevel.get_request_handler(method) is None:
            lowlevel.add_request_handler(method, params_type, handler)


def register(mcp: MCPServer) -> None:
    """Add the session-era fixtures."""
    for fn in (
        test_sampling,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
    ):
        mcp.add_tool(fn)
    mcp.resource(WATCHED_URI, mime_type="text/plain")(watched_resource)
    _add_missing_handlers(mcp)
