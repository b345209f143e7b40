"""imap-mcp: sealing."""
