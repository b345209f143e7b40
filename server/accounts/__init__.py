"""Many mailboxes behind one server: the accounts and what each may hold.

`loading` reads `IMAP_MCP_ACCOUNTS_FILE` (or the environment alone) into `Account`s, each with its tool policy
(`tools.policy`); `pools` gives every account its own bounded connection pool under one total bound. Serving them
(one app per account, the bearer token picking it, the file read again) is `serving`'s.
"""
