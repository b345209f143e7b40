"""What can go wrong getting an access token; every message is safe to show (never a token)."""

from __future__ import annotations


class OAuthError(Exception):
    """No usable access token; the message says what to do."""


class SignInRequired(OAuthError):
    """The provider refused the refresh token (invalid_grant): the person must sign in again."""


class ProviderRefused(OAuthError):
    """The provider answered a token or device request with an OAuth error code (RFC 6749 section 5.2)."""

    def __init__(self, message: str, code: str, interval: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.interval = interval
