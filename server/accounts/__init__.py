"""Many mailboxes behind one server, and the operator's policy over what an assistant may do.

`settings_file` reads `IMAP_MCP_ACCOUNTS_FILE` (or the environment alone) into `Account`s;
`policy` decides which tools each account offers; `pools` gives every account its own bounded
connection pool under one total bound; `routing` picks the account from the bearer token over
HTTP; `server_info` is the `get_server_info` tool; `serving` puts them together.
"""
