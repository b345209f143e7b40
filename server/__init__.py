"""imap-mcp: server."""
