"""Test-only fixtures that the MCP conformance suite calls (`test_simple_text`, `test_input_required_*`, ...).

Registered only when the server starts with `IMAP_MCP_SPEC_FIXTURES=true`; never in production.
They go through the same MCPServer, transports, protocol layer and request-state sealing as the
real tools, so a conformance run exercises the real stack. `wire/*.json` holds hand-written wire
exchanges (from the 2026-07-28 spec) that the hypothesis tests mutate.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from . import catalog, input_required, legacy, tools


def register(mcp: MCPServer) -> None:
    """Add every fixture tool, prompt, resource, completion and legacy handler to `mcp`."""
    tools.register(mcp)
    input_required.register(mcp)
    legacy.register(mcp)
    catalog.register(mcp)


__all__ = ["register"]
