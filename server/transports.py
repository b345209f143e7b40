"""Serving the server object over stdio and Streamable HTTP."""

from __future__ import annotations

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.types import ASGIApp

from imap_mcp.server.http_access import MAX_BODY_BYTES, AccessControl, HttpSettings
from imap_mcp.server.spec_errors import ModernEnvelopeRouting

MCP_PATH = "/mcp"


def run_stdio(mcp: MCPServer) -> None:
    anyio.run(mcp.run_stdio_async)


def sdk_http_app(mcp: MCPServer, settings: HttpSettings) -> Starlette:
    """The SDK's Streamable HTTP app for `mcp` at `/mcp`, with its own lifespan."""
    return mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=settings.legacy_http == "stateless",
        json_response=False,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=settings.session_idle_seconds,
        max_sessions=None,  # bounded per caller by AccessControl, so no caller can use up a global limit
    )


def guarded_app(app: ASGIApp, settings: HttpSettings) -> ASGIApp:
    """`app` behind `AccessControl` and `ModernEnvelopeRouting`."""
    return AccessControl(ModernEnvelopeRouting(app), settings)


def http_app(mcp: MCPServer, settings: HttpSettings | None = None) -> ASGIApp:
    """The ASGI app: `/mcp` behind `AccessControl`, plus `/healthz`.

    2026-07-28 requests are always stateless single POSTs (the SDK routes them by the
    `MCP-Protocol-Version` header), so any replica can answer any of them. A 2025-11-25 client
    gets a session with SSE responses by default, so a question can be pushed to it mid-call;
    `IMAP_MCP_LEGACY_HTTP=stateless` serves those clients without a session (for replicas
    without sticky routing; guarded tools then use the two-call token).
    Host and Origin are checked by `AccessControl`, so the SDK's localhost-only check is off; it also
    bounds 2025-11-25 sessions per caller and refuses oversized bodies before anything reads them.
    """
    settings = settings or HttpSettings()
    return guarded_app(sdk_http_app(mcp, settings), settings)


def serve_app(app: ASGIApp, host: str, port: int) -> None:
    uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")


def run_http(mcp: MCPServer, host: str, port: int, settings: HttpSettings | None = None) -> None:
    serve_app(http_app(mcp, settings), host, port)
