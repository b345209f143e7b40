"""imap-mcp's server: the MCP face (`serving/`, `tools/`), the commands (`cli`) and one folder per feature behind
the tools (`imap/`, `reading/`, `changes/`, `outgoing/`, `mailboxes/`, `webhooks/`, …); data flows one way: tool →
guard (`protocol`) → seal/open (`sealing`) → mailbox.

The few modules at its top level stand alone, each saying why in its docstring (a test keeps it so).
"""
