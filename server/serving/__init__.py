"""Serving the MCP server: the server object assembled (`app`), over stdio and Streamable HTTP (`transports`, the
ASGI factory `asgi`), who may call over HTTP (`http_access`), what every start does first (`startup`), and many
accounts behind one HTTP server (`accounts`: one app per account; `account_routing`: the bearer token picks it;
`reloading`: the accounts file read again while serving)."""
