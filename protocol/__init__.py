"""imap-mcp: protocol."""
