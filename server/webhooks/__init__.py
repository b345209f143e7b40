"""New mail, told: an account's webhook, its outbox of events, and the watcher that fills and delivers it.

The MCP request path stays stateless: the webhook settings, the outbox and the delivery state
live in a store (`store`: SQLite by default, PostgreSQL for several replicas), with the URL,
auth header and signing secret encrypted under `IMAP_MCP_STORE_KEYS` (`cipher`). The operator
sets the webhook (`command`: `imap-mcp webhook set/show/clear`); `imap-mcp watch` turns new
INBOX mail into events (`watcher`) and delivers them signed (`delivery`, `signing`).
"""
