"""MCP authorization: this server as an OAuth 2.1 resource server (the MCP 2026-07-28 authorization spec).

`settings` reads `IMAP_MCP_OAUTH_*`; `keys` fetches and caches the authorization server's signing keys (its
JWKS); `tokens` verifies an access token (a JWT) against them and says who it stands for; `metadata` serves
the protected resource metadata (RFC 9728) and writes the `WWW-Authenticate` challenges. The IMAP side's
OAuth (this server as a client of a mail provider) is `server/oauth/`, which has nothing to do with this.
"""
