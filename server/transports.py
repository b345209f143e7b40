"""Serving the server object over stdio and Streamable HTTP."""

from __future__ import annotations

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette

MCP_PATH = "/mcp"


def run_stdio(mcp: MCPServer) -> None:
    anyio.run(mcp.run_stdio_async)


def http_app(mcp: MCPServer, host: str = "127.0.0.1") -> Starlette:
    """The ASGI app at `/mcp`.

    2026-07-28 requests are always stateless single POSTs (the SDK routes them by the
    `MCP-Protocol-Version` header). A 2025-11-25 client gets a session with SSE responses, so a
    question can be pushed to it mid-call.
    """
    return mcp.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=False, json_response=False, host=host)


def run_http(mcp: MCPServer, host: str, port: int) -> None:
    uvicorn.run(http_app(mcp, host=host), host=host, port=port, log_level="warning", lifespan="on")
