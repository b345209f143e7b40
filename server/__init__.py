"""imap-mcp's server: the MCP face, the entry points and one folder per feature.

Loose modules are the entry points and cross-cutting parts: `app` (the MCPServer), `cli`,
`asgi`, `startup`, `transports`, `config`, `http_access`, `spec_errors`, `guard` (settings →
`protocol.Guard`), `errors` (the one error tree), `logs`, `tls`. `tools/` holds the MCP tools;
the logic behind each is in a feature folder: `imap/` (connections, pool, failures, lookups),
`reading/`, `changes/`, `outgoing/`, and `demo/` (out of the request path). Data flows one way:
tool → guard (`protocol`) → seal/open (`sealing`) → mailbox.
"""
