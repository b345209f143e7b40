"""Answers the SDK (mcp 2.3) gives differently from the 2026-07-28 error table, made to match it.

Two places:

- `StrictParams`, SDK middleware: a `tools/call` of a tool that does not exist, a `prompts/get`
  of an unknown prompt or one missing a required argument, and a list request with a cursor
  this server never issued are malformed requests — JSON-RPC -32602 (HTTP 400) — not an
  `isError` result, an internal error, or a silently ignored cursor.
- `ModernEnvelopeRouting`, ASGI middleware: the SDK chooses the protocol path by the
  `MCP-Protocol-Version` header alone. A body carrying the 2026 envelope key
  (`_meta["io.modelcontextprotocol/protocolVersion"]`) whose header is missing or names a
  handshake-era version would fall onto the 2025 session path and get "-32600 missing session"
  with a null id. Here it gets what the spec's check order says: -32602 when `_meta` lacks
  `clientCapabilities`, -32020 when the header is missing or disagrees with the body, -32022
  when both name a handshake-era version (those exist only through `initialize`) — each with
  the request's id echoed. A request inside a 2025-11-25 session (it carries `Mcp-Session-Id`)
  is the exception: its era was settled by `initialize`, so the 2026 envelope keys a gateway
  copied into it from its own 2026 client are removed and the request is served in its session
  (the SDK would otherwise refuse it on the session's stream).
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
#: the 2026-07-28 request envelope; meaningless inside a 2025-11-25 session
ENVELOPE_KEYS = frozenset(
    {VERSION_KEY, CAPABILITIES_KEY, "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel"}
)
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022
#: the largest body read here, the SDK's own limit: a larger one is refused (413) as soon as it passes it
MAX_INSPECTED_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE


#: list methods; every list is answered in one page, so no cursor is ever valid
LIST_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})


class StrictParams:
    """SDK middleware: unknown tools and prompts, missing prompt arguments and foreign cursors are -32602."""

    def __init__(self, mcp: MCPServer) -> None:
        self._mcp = mcp

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        name = params.get("name")
        if ctx.method == "tools/call" and isinstance(name, str):
            # one lookup in the SDK's registry, not a listing of every tool with its schemas on every call
            if self._mcp._tool_manager.get_tool(name) is None:
                raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
        elif ctx.method == "prompts/get" and isinstance(name, str):
            await self._check_prompt(name, params.get("arguments"))
        elif ctx.method in LIST_METHODS and params.get("cursor") is not None:
            raise MCPError(
                INVALID_PARAMS, "Invalid cursor: this server answers every list in one page; list again without it."
            )
        return await call_next(ctx)

    async def _check_prompt(self, name: str, arguments: Any) -> None:
        prompt = next((p for p in await self._mcp.list_prompts() if p.name == name), None)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
        given = arguments if isinstance(arguments, dict) else {}
        missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in given]
        if missing:
            raise MCPError(INVALID_PARAMS, f"Missing required arguments for prompt {name}: {', '.join(missing)}")


def _envelope_error(body: Any, header: str | None) -> tuple[int, str, dict[str, Any] | None] | None:
    """The error a modern-envelope body deserves when the SDK would route it to the legacy path."""
    if not isinstance(body, dict):
        return None
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or VERSION_KEY not in meta:
        return None  # not a 2026 envelope: the legacy path is right
    if header is not None and header not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None  # the SDK takes the modern path and checks the rest itself
    version = meta[VERSION_KEY]
    if CAPABILITIES_KEY not in meta:
        return INVALID_PARAMS, f"Missing required _meta key {CAPABILITIES_KEY}", None
    if header is None:
        return HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header is missing", None
    if header != version:
        return HEADER_MISMATCH, f"Header mismatch: MCP-Protocol-Version header {header!r} does not match body", None
    supported = list(MODERN_PROTOCOL_VERSIONS)
    return UNSUPPORTED_VERSION, "Unsupported protocol version", {"supported": supported, "requested": version}


class ModernEnvelopeRouting:
    """ASGI middleware in front of the SDK app; see the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        header = headers.get("mcp-protocol-version")
        if header is not None and header.strip() not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)  # the common case: no need to read the body here
            return
        chunks, complete = await _read_body(receive)
        if sum(map(len, chunks)) > MAX_INSPECTED_BODY:
            await _send_error(
                send, None, -32600, f"Request body too large: at most {MAX_INSPECTED_BODY} bytes.", None, 413
            )
            return
        raw = b"".join(chunks)
        if complete:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            if headers.get("mcp-session-id") is not None:
                stripped = _without_envelope(body)
                if stripped is not None:
                    chunks = [json.dumps(stripped).encode()]
                    scope = _with_content_length(scope, len(chunks[0]))
                await self.app(scope, _replay(chunks, complete, receive), send)
                return
            error = _envelope_error(body, header.strip() if header is not None else None)
            if error is not None:
                await _send_error(send, body.get("id") if isinstance(body, dict) else None, *error)
                return
        await self.app(scope, _replay(chunks, complete, receive), send)


def _without_envelope(body: Any) -> dict[str, Any] | None:
    """`body` without the 2026 envelope keys in its `_meta`, or None when it has none of them."""
    params = body.get("params") if isinstance(body, dict) else None
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or not ENVELOPE_KEYS & meta.keys():
        return None
    kept = {key: value for key, value in meta.items() if key not in ENVELOPE_KEYS}
    return {**body, "params": {**params, "_meta": kept}}


def _with_content_length(scope: Scope, length: int) -> Scope:
    """`scope` whose Content-Length header says `length` (the body was rewritten)."""
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(length).encode())]}


async def _read_body(receive: Receive) -> tuple[list[bytes], bool]:
    """The request body as read so far, and whether it is all there; reading stops once it is over
    MAX_INSPECTED_BODY, so at most that plus one chunk is ever held."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return chunks, False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return chunks, True
        if size > MAX_INSPECTED_BODY:
            return chunks, False


def _replay(chunks: list[bytes], complete: bool, receive: Receive) -> Receive:
    """A `receive` that hands the app the chunks already read, then continues with the real one."""
    pending = list(chunks)

    async def replay() -> Message:
        if pending:
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending) or not complete}
        return await receive()

    return replay


async def _send_error(
    send: Send, request_id: Any, code: int, message: str, data: dict[str, Any] | None, status: int = 400
) -> None:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    payload = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})
