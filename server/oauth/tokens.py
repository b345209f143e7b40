"""Access tokens for one account: cached for every connection, refreshed once however many callers ask.

A token is used until shortly before its `expires_in` runs out, or until a server rejects it.
Then one refresh_token grant gets the next; callers that ask meanwhile wait for it and share it.
When the provider rotates the refresh token, the new one is kept (and written to the token file).
A refresh token the provider refused (invalid_grant) is not sent again: every caller gets
`SignInRequired` until the token file holds another one. After any other failure of the token
endpoint, callers get the same error for `RETRY_AFTER_FAILURE` seconds without a new request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..logs import get_logger
from .endpoint import post_form, where
from .errors import OAuthError, ProviderRefused, SignInRequired
from .settings import OAuthSettings
from .token_file import read_fields, store_refresh_token

#: at most this many seconds before expiry a token is replaced (half its lifetime when shorter)
REFRESH_MARGIN = 60.0
#: when the provider gives no expires_in
DEFAULT_LIFETIME = 300.0
RETRY_AFTER_FAILURE = 10.0


@dataclass(frozen=True)
class _Cached:
    value: str
    fresh_until: float


class TokenSource:
    def __init__(self, settings: OAuthSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: _Cached | None = None
        self._refresh_token_in_memory = settings.refresh_token.reveal() if settings.refresh_token else None
        self._refused_refresh_token: str | None = None
        self._failure: tuple[OAuthError, float] | None = None

    def access_token(self) -> str:
        """A token that is not about to expire and no server has rejected."""
        with self._lock:
            cached = self._cached
            if cached is not None and self._clock() < cached.fresh_until:
                return cached.value
            return self._refresh()

    def rejected(self, token: str) -> None:
        """A server refused `token`: the next `access_token` gets a new one (unless another caller already did)."""
        with self._lock:
            if self._cached is not None and self._cached.value == token:
                self._cached = None

    def _current_refresh_token(self) -> str:
        if self.settings.token_file is not None:
            stored = read_fields(self.settings.token_file).get("refresh_token")
            if isinstance(stored, str) and stored:
                return stored
            raise SignInRequired(
                f"The token file {self.settings.token_file} holds no refresh token: sign in again with imap-mcp auth."
            )
        assert self._refresh_token_in_memory is not None
        return self._refresh_token_in_memory

    def _refresh(self) -> str:
        refresh_token = self._current_refresh_token()
        if refresh_token == self._refused_refresh_token:
            raise self._sign_in_required()
        if self._failure is not None and self._clock() < self._failure[1]:
            raise self._failure[0]
        try:
            answer = post_form(
                self.settings,
                self.settings.token_url,
                {"grant_type": "refresh_token", "refresh_token": refresh_token, **self._scope()},
                also_secret=[self._cached.value] if self._cached else [],
            )
        except ProviderRefused as exc:
            if exc.code == "invalid_grant":
                self._refused_refresh_token = refresh_token
                raise self._sign_in_required() from None
            raise self._remember_failure(exc) from None
        except OAuthError as exc:
            raise self._remember_failure(exc) from None
        self._failure = None
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            missing = f"The OAuth provider at {self._host()} answered without an access_token; check the token URL."
            raise self._remember_failure(OAuthError(missing))
        self._keep_rotated(refresh_token, answer.get("refresh_token"))
        lifetime = _lifetime(answer.get("expires_in"))
        self._cached = _Cached(token, self._clock() + lifetime - min(REFRESH_MARGIN, lifetime / 2))
        return token

    def _scope(self) -> dict[str, str]:
        return {"scope": self.settings.scope} if self.settings.scope else {}

    def _keep_rotated(self, old: str, new: object) -> None:
        if not isinstance(new, str) or not new or new == old:
            return
        if self.settings.token_file is not None:
            store_refresh_token(self.settings.token_file, new)
            get_logger().info("the OAuth provider rotated the refresh token; saved it in %s", self.settings.token_file)
            return
        self._refresh_token_in_memory = new
        get_logger().warning(
            "the OAuth provider rotated the refresh token; it is kept in memory only: set IMAP_OAUTH_TOKEN_FILE "
            "(imap-mcp auth writes one) so a restart does not need a new sign-in"
        )

    def _remember_failure(self, exc: OAuthError) -> OAuthError:
        self._failure = (exc, self._clock() + RETRY_AFTER_FAILURE)
        return exc

    def _sign_in_required(self) -> SignInRequired:
        where = f"the token file {self.settings.token_file}" if self.settings.token_file else "IMAP_OAUTH_REFRESH_TOKEN"
        return SignInRequired(
            f"The OAuth provider at {self._host()} refused the refresh token in {where} (invalid_grant: revoked or "
            "expired): sign in again with imap-mcp auth."
        )

    def _host(self) -> str:
        return where(self.settings.token_url)


def _lifetime(expires_in: object) -> float:
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0:
        return float(expires_in)
    if isinstance(expires_in, str) and expires_in.isdigit() and int(expires_in) > 0:
        return float(expires_in)
    return DEFAULT_LIFETIME


_sources: dict[OAuthSettings, TokenSource] = {}
_sources_lock = threading.Lock()


def token_source(settings: OAuthSettings) -> TokenSource:
    """The one source for these settings in this process: IMAP and SMTP, and every pooled connection, share it."""
    with _sources_lock:
        source = _sources.get(settings)
        if source is None:
            source = _sources[settings] = TokenSource(settings)
        return source
