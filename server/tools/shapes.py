"""A tool's shape (its argument model, JSON schemas, context parameter) worked out once per process.

The SDK derives a tool's pydantic argument model and its input and output schemas from the function
each time the tool is registered: about 13 ms a tool, 0.2 s of CPU for one server's tools. A server is
built per account (a replica serving an accounts file builds one for each) and per in-process test;
its tool functions are closures made anew by each build, but with the same code and signature.

So the first registration of a shape keeps a pattern `Tool`, never registered itself, and every
registration gets a copy of it holding its own function and its own `FuncMetadata` (whose published
output schema `tools.output_schemas` replaces per server). The key is everything the SDK reads: the
function's code (and, behind a `functools.wraps` decorator, the wrapped function's), its signature
with defaults and annotations, and the name, title, description, annotations, icons, meta and
`structured_output` it is registered with. A callable without code of its own is not kept.

Every tool is an `OwnWordsTool`: arguments its model refuses are answered in imap-mcp's words
(`tools.argument_errors`, raised as `tools.registry.arguments_refused`), never with pydantic's report and
links.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable, Hashable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import Icon, ToolAnnotations
from pydantic import ValidationError

from .registry import arguments_refused

#: at most this many patterns are kept (one per tool and distinct description is the usual few dozen)
MOST_KEPT = 512

_patterns: dict[Hashable, Tool] = {}
_lock = threading.Lock()


class OwnWordsTool(Tool):
    """A tool whose refused arguments are answered in imap-mcp's words (`tools.argument_errors.in_our_words`)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            # the SDK raises a ToolError (not a crash's UnexpectedToolError) from a ValidationError for arguments its
            # model refuses, and for nothing else: a tool's own refusals come from a ToolError or from none
            refused = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(refused, ValidationError):
                raise
            # from the ValidationError still: the SDK then logs the arguments' names only, never their values
            raise arguments_refused(self.name, refused, self.parameters, arguments) from refused


def _key(fn: Callable[..., Any], options: dict[str, Any]) -> Hashable | None:
    code = getattr(fn, "__code__", None)
    inner = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None or inner is None:
        return None
    annotations: ToolAnnotations | None = options["annotations"]
    icons: list[Icon] | None = options["icons"]
    return (
        code,
        inner,
        str(inspect.signature(fn)),
        options["name"],
        options["title"],
        options["description"],
        annotations.model_dump_json() if annotations else None,
        json.dumps([icon.model_dump(mode="json") for icon in icons]) if icons else None,
        json.dumps(options["meta"], sort_keys=True, default=repr),
        options["structured_output"],
    )


def shaped_tool(fn: Callable[..., Any], **options: Any) -> Tool:
    """`Tool.from_function(fn, **options)`, from a kept pattern when one of the same shape was made before.

    `options` are `Tool.from_function`'s keywords: name, title, description, annotations, icons, meta,
    structured_output.
    """
    key = _key(fn, options)
    with _lock:
        pattern = _patterns.get(key) if key is not None else None
    if pattern is None:
        pattern = OwnWordsTool.from_function(fn, **options)
        if key is not None:
            with _lock:
                if len(_patterns) < MOST_KEPT:
                    _patterns.setdefault(key, pattern)
        else:
            return pattern
    return pattern.model_copy(update={"fn": fn, "fn_metadata": pattern.fn_metadata.model_copy()})
