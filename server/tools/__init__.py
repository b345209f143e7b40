"""The MCP tools, one module per group; each exposes `register(mcp, pool)`."""
