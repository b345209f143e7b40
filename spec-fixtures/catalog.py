"""Fixture prompts, resources, the resource template and the completion handler."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Prompt, UserMessage
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    ImageContent,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)

from .media import PNG_BASE64, PNG_BYTES

STATIC_TEXT = "This is the content of the static text resource."


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


def test_simple_prompt() -> list[UserMessage]:
    """A prompt without arguments."""
    return [UserMessage(role="user", content=_text("This is a simple prompt for testing."))]


def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    """A prompt that substitutes two required arguments."""
    return [UserMessage(role="user", content=_text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))]


def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    """A prompt that embeds the resource it is given."""
    contents = TextResourceContents(uri=resourceUri, mime_type="text/plain", text="Embedded fixture text.")
    return [
        UserMessage(role="user", content=EmbeddedResource(type="resource", resource=contents)),
        UserMessage(role="user", content=_text("Summarise the resource above.")),
    ]


def test_prompt_with_image() -> list[UserMessage]:
    """A prompt that carries an image."""
    return [
        UserMessage(role="user", content=ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")),
        UserMessage(role="user", content=_text("Describe the image above.")),
    ]


def test_prompt_internal_error() -> list[UserMessage]:
    """Crashes on purpose, so the wire tests can see an internal error (-32603) without the reason leaking."""
    raise RuntimeError("test_prompt_internal_error crashes on purpose")


PROMPTS = (
    test_simple_prompt,
    test_prompt_with_arguments,
    test_prompt_with_embedded_resource,
    test_prompt_with_image,
    test_prompt_internal_error,
)


def static_text() -> str:
    """A fixed text resource."""
    return STATIC_TEXT


def static_binary() -> bytes:
    """A fixed PNG, served as a blob."""
    return PNG_BYTES


def template_data(id: str) -> str:
    """JSON naming the id taken from the URI."""
    return json.dumps({"id": id, "source": "test://template/{id}/data"})


async def _complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    """The fixtures offer no suggestions; the handler exists so `completions` is declared and served."""
    return Completion(values=[], total=0, has_more=False)


def _register_resources(mcp: MCPServer) -> None:
    decorators: tuple[tuple[Any, str, str], ...] = (
        (static_text, "test://static-text", "text/plain"),
        (static_binary, "test://static-binary", "image/png"),
        (template_data, "test://template/{id}/data", "application/json"),
    )
    for fn, uri, mime in decorators:
        mcp.resource(uri, mime_type=mime)(fn)


def register(mcp: MCPServer) -> None:
    """Add the fixture prompts, resources and completion handler."""
    for fn in PROMPTS:
        mcp.add_prompt(Prompt.from_function(fn))
    _register_resources(mcp)
    mcp.completion()(_complete)  # type: ignore[no-untyped-call]  # the SDK leaves completion() unannotated
