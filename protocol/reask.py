"""Guarded tools treat a `requestState` the SDK cannot open as *no answer*, not as an error.

The SDK's `RequestStateBoundary` opens every echoed state before a handler runs and answers one
it cannot open (tampered, expired, another key or principal, other arguments) with -32602. For
the tools that ask a person, the likeliest cause is innocent (a gateway slept while the person
read, a replica restarted with new keys), and the right answer is to ask again. So this
middleware sits just *outside* the boundary and, for guarded tool names only, catches exactly
the boundary's frozen rejection and re-runs the call with `requestState` and `inputResponses`
removed: the tool then sees a first round and asks a fresh question. A forged "accept" stays
powerless because it arrives without a state the tool can open. Every other tool (e.g. the
conformance fixture `test_input_required_result_tampered_state`) keeps the -32602.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateBoundary
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

logger = logging.getLogger("imap_mcp.protocol")

#: the `data` of the SDK boundary's one rejection (request_state._reject)
_BOUNDARY_REJECTION = {"reason": "invalid_request_state"}
_ANSWER_FIELDS = ("requestState", "inputResponses")


def is_state_rejection(error: MCPError) -> bool:
    return error.error.code == INVALID_PARAMS and error.error.data == _BOUNDARY_REJECTION


class ReaskOnUnopenedState:
    """Middleware: for `guarded` tools, a state the boundary refuses becomes a first round."""

    def __init__(self, is_guarded: Callable[[str], bool]) -> None:
        self._is_guarded = is_guarded

    def _applies(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        params: Mapping[str, Any] = ctx.params or {}
        return (
            ctx.method == "tools/call"
            and isinstance(params.get("name"), str)
            and self._is_guarded(params["name"])
            and params.get("requestState") is not None
        )

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if not self._applies(ctx):
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except MCPError as exc:
            if not is_state_rejection(exc):
                raise
        assert ctx.params is not None
        logger.info("approval state for %s did not open (see the SDK's reason above): asking again", ctx.params["name"])
        fresh = {key: value for key, value in ctx.params.items() if key not in _ANSWER_FIELDS}
        return await call_next(replace(ctx, params=fresh))


def install_before_boundary(mcp: MCPServer, middleware: ReaskOnUnopenedState) -> None:
    """Put `middleware` right outside the SDK's request-state boundary (which MCPServer always installs)."""
    chain = mcp.middleware
    position = next(i for i, item in enumerate(chain) if isinstance(item, RequestStateBoundary))
    chain.insert(position, middleware)
