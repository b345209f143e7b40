"""The MCP tools, one module per group; each exposes `register(mcp, pool, ...)`. Guarded tools
register with `Guard.tool`; `errors` is the one place refusals become tool errors."""
