"""Who may do what, by token: the scope each tool needs, and the SDK middleware that holds to it.

Each tool needs one scope, from the registry (`tools.registry.TOOLS`): the webhook tools
`mail.webhooks`; the tools that send mail `mail.send`; the tools that change nothing
(`readOnlyHint`) `mail.read`; every other (flags, moves, deletes, drafts, mailboxes, the keyword
`list_new_messages` keeps) `mail.change`. Attachments as resources need `mail.read`. A caller
with an OAuth access token sees in `tools/list` only the tools its scopes cover (the list is
cached privately, the SDK's default), and a `tools/call` of another is refused before it runs,
naming the scope to ask for. A static bearer token, stdio, and a server without tokens are not
limited by scopes (their policy is the account's).
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ListToolsResult

from ..tools.registry import BY_NAME, ToolSpec
from .tokens import IDENTITY_STATE_KEY, Identity

READ, CHANGE, SEND, WEBHOOKS = "mail.read", "mail.change", "mail.send", "mail.webhooks"
#: methods that read mail without a tool
RESOURCE_METHODS = frozenset({"resources/list", "resources/templates/list", "resources/read"})


def scope_needed(spec: ToolSpec) -> str:
    if spec.feature == "webhooks":
        return WEBHOOKS
    if spec.feature == "outgoing" and spec.destructive:
        return SEND
    return READ if spec.read_only else CHANGE


#: the scope each tool of the registry needs
SCOPE_OF = {name: scope_needed(spec) for name, spec in BY_NAME.items()}


def tool_scope(name: str) -> str:
    """The scope tool `name` needs (`mail.read` for a tool outside the registry: the test-only fixtures)."""
    return SCOPE_OF.get(name, READ)


def request_identity(ctx: ServerRequestContext[Any, Any]) -> Identity | None:
    """The OAuth identity `AccessControl` put on this HTTP request; None without an access token."""
    request = getattr(ctx, "request", None)
    state = request.scope.get("state") if request is not None else None
    found = state.get(IDENTITY_STATE_KEY) if isinstance(state, dict) else None
    return found if isinstance(found, Identity) else None


class ScopeGate:
    """SDK middleware: an OAuth caller lists and calls only the tools its scopes cover (see the module)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        identity = request_identity(ctx)
        if identity is None:
            return await call_next(ctx)
        params = ctx.params if isinstance(ctx.params, dict) else {}
        name = params.get("name")
        if ctx.method == "tools/call" and isinstance(name, str):
            _require(identity, tool_scope(name), f"the tool {name}")
        elif ctx.method in RESOURCE_METHODS:
            _require(identity, READ, "attachments as resources")
        result = await call_next(ctx)
        return _covered_tools(result, identity) if ctx.method == "tools/list" else result


def _covered_tools(result: HandlerResult, identity: Identity) -> HandlerResult:
    """A `tools/list` result (the model, or its wire form as this server's listing makes it) with only the tools
    `identity`'s scopes cover."""
    if isinstance(result, ListToolsResult):
        return result.model_copy(update={"tools": [t for t in result.tools if tool_scope(t.name) in identity.scopes]})
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        covered = [
            t for t in result["tools"] if isinstance(t, dict) and tool_scope(str(t.get("name"))) in identity.scopes
        ]
        return {**result, "tools": covered}
    return result


def _require(identity: Identity, scope: str, what: str) -> None:
    if scope not in identity.scopes:
        raise MCPError(
            INVALID_PARAMS,
            f"Not allowed: {what} needs the scope {scope}, which this access token does not grant; "
            f"sign in again asking for {scope}.",
            {"scope": scope},
        )
