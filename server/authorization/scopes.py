"""Who may do what, by token: the scope each tool needs, and the SDK middleware that holds to it.

Each tool needs one scope, from the registry (`tools.registry.TOOLS`): the webhook tools `mail.webhooks`; the
tools that send mail `mail.send`; the tools that change nothing (`readOnlyHint`) `mail.read`; every other
(flags, moves, deletes, drafts, mailboxes, the keyword `list_new_messages` keeps) `mail.change`. Attachments
as resources need `mail.read`. A caller with an OAuth access token sees in `tools/list` only the tools its
scopes cover (the list is cached privately, the SDK's default), and a `tools/call` of another is refused
before it runs, naming the scope to ask for: on the 2026-07-28 path, whose `Mcp-Method` and `Mcp-Name` headers
name the call (the SDK refuses a body that says otherwise), with HTTP 403 and `WWW-Authenticate: Bearer
error="insufficient_scope", scope="…"` (`RequiringScopes`), the token's scopes and the one missing, so a
client can sign in again for them without losing the others; on the 2025-11-25 path, whose call is in the body
only, with JSON-RPC -32602 (`ScopeGate`). A static bearer token, stdio, and a server without tokens are not
limited by scopes (their policy is the account's).
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ListToolsResult
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..tools.registry import BY_NAME, ToolSpec
from .metadata import metadata_url
from .settings import ALL_SCOPES, ResourceServerSettings
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


def _refusal(scope: str, what: str) -> str:
    return (
        f"Not allowed: {what} needs the scope {scope}, which this access token does not grant; "
        f"sign in again asking for {scope}."
    )


def _require(identity: Identity, scope: str, what: str) -> None:
    if scope not in identity.scopes:
        raise MCPError(INVALID_PARAMS, _refusal(scope, what), {"scope": scope})


def _named_by_headers(headers: Headers) -> tuple[str, str] | None:
    """(the scope needed, what needs it) of a 2026-07-28 request, by its routing headers; None when it needs none
    (or names a tool this server does not know: that is the protocol's unknown-tool error)."""
    method, name = headers.get("mcp-method"), headers.get("mcp-name")
    if method == "tools/call" and name in SCOPE_OF:
        return SCOPE_OF[name], f"the tool {name}"
    if method in RESOURCE_METHODS:
        return READ, "attachments as resources"
    return None


class RequiringScopes:
    """ASGI middleware behind `AccessControl`: 403 `insufficient_scope` for a 2026-07-28 call the request's access
    token has no scope for (see the module)."""

    def __init__(self, app: ASGIApp, settings: ResourceServerSettings) -> None:
        self.app = app
        self._settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        identity = (scope.get("state") or {}).get(IDENTITY_STATE_KEY) if scope["type"] == "http" else None
        named = _named_by_headers(Headers(scope=scope)) if isinstance(identity, Identity) else None
        if isinstance(identity, Identity) and named is not None and named[0] not in identity.scopes:
            needed, what = named
            asked = " ".join(s for s in ALL_SCOPES if s in identity.scopes or s == needed)
            challenge = (
                f'Bearer error="insufficient_scope", scope="{asked}", '
                f'resource_metadata="{metadata_url(self._settings)}"'
            )
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": _refusal(needed, what)}}
            await JSONResponse(body, 403, {"WWW-Authenticate": challenge})(scope, receive, send)
            return
        await self.app(scope, receive, send)
