"""Serving the server object over stdio and Streamable HTTP."""

from __future__ import annotations

import errno
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.types import ASGIApp

from imap_mcp.protocol.errors import ImapMcpError
from imap_mcp.protocol.spec_errors import ModernEnvelopeRouting

from ..authorization.metadata import ServingMetadata
from ..authorization.scopes import RequiringScopes
from ..authorization.tokens import TokenVerifier
from .http_access import MAX_BODY_BYTES, AccessControl, HttpSettings, Tokens

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


def guarded_app(app: ASGIApp, settings: HttpSettings, tokens: Tokens | None = None) -> ASGIApp:
    """`app` behind `AccessControl` (with `tokens`, which may change while serving) and `ModernEnvelopeRouting`;
    with `settings.oauth`, OAuth access tokens are accepted too and the protected resource metadata is served."""
    if settings.oauth is None:
        return AccessControl(ModernEnvelopeRouting(app), settings, tokens)
    verifier = TokenVerifier(settings.oauth)
    scoped = RequiringScopes(ModernEnvelopeRouting(app), settings.oauth)
    return ServingMetadata(AccessControl(scoped, settings, tokens, verifier), settings.oauth)


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


class CannotListen(ImapMcpError, OSError):
    """The address to serve on cannot be bound; the message is the one line to print."""


def mcp_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{MCP_PATH}"


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port, or `CannotListen` saying why (the port is in use, ...)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # not reuse of a port in use: only TIME_WAIT
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            reason = "the port is already in use: stop what listens there, or choose another --port"
        else:
            reason = f"{exc.strerror or exc}: check --host and --port"
        raise CannotListen(f"cannot listen on {host}:{port}: {reason}.") from None
    return sock


def listen_or_exit(host: str, port: int) -> socket.socket:
    """`listen()`, or one `imap-mcp: …` line on stderr and exit code 1."""
    try:
        return listen(host, port)
    except CannotListen as exc:
        print(f"imap-mcp: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


def serve_app(app: ASGIApp, sock: socket.socket) -> None:
    """Serve `app` on `sock` (from `listen`) until stopped; says where on stderr."""
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"imap-mcp: listening on {mcp_url(host, port)}", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])


def run_http(mcp: MCPServer, sock: socket.socket, settings: HttpSettings | None = None) -> None:
    serve_app(http_app(mcp, settings), sock)
