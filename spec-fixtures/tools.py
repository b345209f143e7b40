"""Content, progress, logging, capability and list-change fixture tools (both protocol eras)."""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.shared.exceptions import MCPError
from mcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)
from pydantic import Field

from .media import PNG_BASE64, WAV_BASE64

SIMPLE_TEXT = "This is a simple text response for testing."
EMBEDDED_TEXT = "This is an embedded resource content."
PROGRESS_STEPS = (0, 50, 100)
STEP_DELAY_S = 0.05


def _image() -> ImageContent:
    return ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")


def test_simple_text() -> str:
    """Returns one fixed text block."""
    return SIMPLE_TEXT


def test_image_content() -> list[ImageContent]:
    """Returns one PNG image block."""
    return [_image()]


def test_audio_content() -> list[AudioContent]:
    """Returns one WAV audio block."""
    return [AudioContent(type="audio", data=WAV_BASE64, mime_type="audio/wav")]


def test_embedded_resource() -> list[EmbeddedResource]:
    """Returns one embedded text resource."""
    contents = TextResourceContents(uri="test://embedded-resource", mime_type="text/plain", text=EMBEDDED_TEXT)
    return [EmbeddedResource(type="resource", resource=contents)]


def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Returns text, an image and an embedded JSON resource in one result."""
    contents = TextResourceContents(
        uri="test://mixed-content-resource", mime_type="application/json", text='{"fixture": "mixed", "n": 3}'
    )
    return [
        TextContent(type="text", text="Three kinds of content follow."),
        _image(),
        EmbeddedResource(type="resource", resource=contents),
    ]


def test_error_handling() -> str:
    """Always fails; the SDK turns the exception into an isError result, not a JSON-RPC error."""
    raise RuntimeError("test_error_handling fails on purpose")


async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100, a short pause apart, on the call's own stream."""
    for step in PROGRESS_STEPS:
        await ctx.report_progress(progress=step, total=100, message=f"step {step} of 100")
        await anyio.sleep(STEP_DELAY_S)
    return "progress reported"


async def test_tool_with_logging(ctx: Context) -> str:
    """Emits three info logs; on 2026-07-28 the SDK drops them unless the request set a logLevel."""
    for stage in ("started", "working", "finished"):
        await ctx.info(f"test_tool_with_logging {stage}")  # deprecated in 2026-07-28, still a legacy fixture
        await anyio.sleep(STEP_DELAY_S)
    return "logged three messages"


test_logging_tool = test_tool_with_logging


async def test_streaming_elicitation(ctx: Context) -> str:
    """Streams a progress notification and nothing else: a 2026 server never sends requests on a stream."""
    await ctx.report_progress(progress=1, total=1, message="streamed")
    return "streamed without asking"


async def test_missing_capability(ctx: Context) -> str:
    """Needs `sampling`: without it the call is a -32021 JSON-RPC error naming the capability."""
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.sampling is None:
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="test_missing_capability requires the client 'sampling' capability",
            data={"requiredCapabilities": {"sampling": {}}},
        )
    return "sampling declared"


def test_x_mcp_header(
    region: Annotated[
        str,
        Field(
            description="Mirrored in the Mcp-Param-Region header",
            json_schema_extra={"x-mcp-header": "Region"},
        ),
    ] = "none",
) -> str:
    """Echoes an argument that clients mirror into an `Mcp-Param-Region` header (SEP-2243)."""
    return f"region={region}"


CONTENT_TOOLS = (
    test_simple_text,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_error_handling,
    test_tool_with_progress,
    test_tool_with_logging,
    test_streaming_elicitation,
    test_missing_capability,
    test_x_mcp_header,
)


def _dynamic() -> str:
    """Exists only for the instant a list-change fixture needs it."""
    return "dynamic"


def _register_list_change_tools(mcp: MCPServer) -> None:
    """Tools that add and remove an entry, then announce the change to `subscriptions/listen` streams."""

    async def test_trigger_tool_change(ctx: Context) -> str:
        """Adds and removes a tool, then sends tools/list_changed."""
        mcp.add_tool(_dynamic, name="test_dynamic_tool", description="Short-lived fixture tool.")
        mcp.remove_tool("test_dynamic_tool")
        await ctx.notify_tools_changed()
        return "tool list changed"

    async def test_trigger_prompt_change(ctx: Context) -> str:
        """Adds and removes a prompt, then sends prompts/list_changed."""
        mcp.add_prompt(Prompt.from_function(_dynamic, name="test_dynamic_prompt", description="Short-lived."))
        mcp.remove_prompt("test_dynamic_prompt")
        await ctx.notify_prompts_changed()
        return "prompt list changed"

    mcp.add_tool(test_trigger_tool_change)
    mcp.add_tool(test_trigger_prompt_change)


def register(mcp: MCPServer) -> None:
    """Add the content and protocol-behaviour fixture tools."""
    for fn in CONTENT_TOOLS:
        mcp.add_tool(fn)
    mcp.add_tool(test_logging_tool, name="test_logging_tool")
    _register_list_change_tools(mcp)
