"""Many mailboxes behind one server, and the operator's policy over what an assistant may do.

`loading` reads `IMAP_MCP_ACCOUNTS_FILE` (or the environment alone) into `Account`s; `policy`
decides which tools each account offers; `pools` gives every account its own bounded connection
pool under one total bound; `routing` picks the account from the bearer token over HTTP;
`serving` puts them together. The `get_server_info` tool is `tools.server_info`.
"""
