"""What can go wrong getting an access token; every message is safe to show (never a token)."""

from __future__ import annotations

from ..errors import ImapMcpError


class OAuthError(ImapMcpError):
    """No usable access token, or the server refused it; the message says what to do.

    The IMAP connection turns it into a `MailboxError` and SMTP into an `OutgoingError`, with the same text.
    """


class SignInRequired(OAuthError):
    """The provider refused the refresh token (invalid_grant): the person must sign in again."""


class ProviderRefused(OAuthError):
    """The provider answered a token or device request with an OAuth error code (RFC 6749 section 5.2)."""

    def __init__(self, message: str, code: str, interval: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.interval = interval
