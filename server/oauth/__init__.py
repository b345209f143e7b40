"""OAuth 2.0 sign-in for IMAP and SMTP: settings, the access-token source, SASL XOAUTH2/OAUTHBEARER, `imap-mcp auth`."""
