"""`imap-mcp auth`: the one-time sign-in that gets a refresh token and writes the token file.

Two flows: the device authorization grant (RFC 8628: the person opens a page anywhere and types
a code) and the installed-app flow (RFC 8252: a browser on this machine is sent back to a
one-shot listener on 127.0.0.1, with PKCE, RFC 7636). The person sees what to open and where the
token was saved; never a token.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Literal, TextIO
from urllib.parse import parse_qs, urlencode, urlsplit

from ..outbound_http import excerpt
from ..setting_values import ConfigError
from .endpoint import post_form
from .errors import OAuthError, ProviderRefused
from .settings import PROVIDERS, OAuthSettings, load_oauth_settings, provider
from .token_file import write_fields

Flow = Literal["device", "browser"]
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
DEFAULT_TOKEN_FILE = Path("~/.config/imap-mcp/oauth-token.json")
#: RFC 8628 section 3.5: the default polling interval, and what slow_down adds
DEFAULT_INTERVAL = 5.0
SLOW_DOWN_STEP = 5.0


class SignInFailed(OAuthError):
    """The sign-in did not finish; the message says why and what to do."""


@dataclass(frozen=True)
class SignIn:
    settings: OAuthSettings
    flow: Flow
    token_file: Path
    wait_seconds: float = 600.0


def sign_in_env(env: Mapping[str, str], provider_or_url: str) -> dict[str, str]:
    """`env` with the command's argument as IMAP_OAUTH_PROVIDER, or as IMAP_OAUTH_TOKEN_URL when it is a URL."""
    chosen = dict(env)
    if provider_or_url in PROVIDERS:
        chosen["IMAP_OAUTH_PROVIDER"] = provider_or_url
    else:
        chosen.pop("IMAP_OAUTH_PROVIDER", None)
        chosen["IMAP_OAUTH_TOKEN_URL"] = provider_or_url
    return chosen


def plan(env: Mapping[str, str], provider_or_url: str, flow: Flow | None, token_file: str | None) -> SignIn:
    """What `imap-mcp auth` will do; `ConfigError` naming the setting when something is missing."""
    if provider_or_url not in PROVIDERS and "://" not in provider_or_url:
        raise ConfigError(
            f"imap-mcp auth {provider_or_url!r}: name google or microsoft, or give the provider's token URL."
        )
    settings = load_oauth_settings(sign_in_env(env, provider_or_url), need_refresh_token=False)
    chosen = flow or _default_flow(settings)
    if chosen == "device" and settings.device_url is None:
        raise ConfigError(
            "IMAP_OAUTH_DEVICE_URL is not set: give the device authorization endpoint, or use --flow browser."
        )
    if chosen == "browser" and settings.auth_url is None:
        raise ConfigError("IMAP_OAUTH_AUTH_URL is not set: give the authorization endpoint, or use --flow device.")
    raw_file = token_file or env.get("IMAP_OAUTH_TOKEN_FILE", "").strip() or str(DEFAULT_TOKEN_FILE)
    return SignIn(settings, chosen, Path(raw_file).expanduser())


def _default_flow(settings: OAuthSettings) -> Flow:
    if settings.provider is not None:
        return provider(settings.provider).default_flow
    return "device" if settings.device_url else "browser"


def run(sign_in: SignIn, out: TextIO = sys.stdout) -> None:
    """Sign in, write the token file (0600) and say where it is."""
    answer = _device_flow(sign_in, out) if sign_in.flow == "device" else _browser_flow(sign_in, out)
    refresh_token = answer.get("refresh_token")
    if not isinstance(refresh_token, str) or not refresh_token:
        raise SignInFailed(
            "The provider signed you in but gave no refresh token: add offline_access (Microsoft) to "
            "IMAP_OAUTH_SCOPE, or for Google make sure the client is a Desktop app, then run imap-mcp auth again."
        )
    settings = sign_in.settings
    write_fields(
        sign_in.token_file,
        {
            "refresh_token": refresh_token,
            "token_url": settings.token_url,
            "client_id": settings.client_id,
            "scope": settings.scope,
        },
    )
    print(f"Signed in. Saved the refresh token to {sign_in.token_file} (readable only by you).", file=out)
    print(f"Serve with: IMAP_AUTH=oauth2 IMAP_OAUTH_TOKEN_FILE={sign_in.token_file}", file=out)


def _device_flow(sign_in: SignIn, out: TextIO) -> dict[str, Any]:
    settings = sign_in.settings
    assert settings.device_url is not None
    started = post_form(settings, settings.device_url, _scope(settings))
    device_code, user_code = started.get("device_code"), started.get("user_code")
    page = started.get("verification_uri") or started.get("verification_url")  # Google says _url
    if not all(isinstance(v, str) and v for v in (device_code, user_code, page)):
        raise SignInFailed(
            "The device authorization endpoint answered without a device code; check IMAP_OAUTH_DEVICE_URL."
        )
    print(f"To sign in, open {page} and enter the code {user_code}", file=out, flush=True)
    interval = _seconds(started.get("interval"), DEFAULT_INTERVAL)
    deadline = time.monotonic() + min(_seconds(started.get("expires_in"), sign_in.wait_seconds), sign_in.wait_seconds)
    while time.monotonic() < deadline:
        time.sleep(interval)
        try:
            return post_form(
                settings, settings.token_url, {"grant_type": DEVICE_GRANT, "device_code": str(device_code)}
            )
        except ProviderRefused as exc:
            if exc.code == "slow_down":
                interval += SLOW_DOWN_STEP
            elif exc.code != "authorization_pending":
                raise SignInFailed(f"The sign-in was not completed ({exc.code}); run imap-mcp auth again.") from None
    raise SignInFailed("The code was not entered in time; run imap-mcp auth again.")


def _seconds(value: object, default: float) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else default


def _scope(settings: OAuthSettings) -> dict[str, str]:
    return {"scope": settings.scope} if settings.scope else {}


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(64)[:96]
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()
    return verifier, challenge


class _Redirect:
    """A one-shot listener on 127.0.0.1 that takes the browser's redirect with the code."""

    def __init__(self, state: str) -> None:
        self.state = state
        self.query: dict[str, str] | None = None
        self.done = threading.Event()
        self._http = HTTPServer(("127.0.0.1", 0), self._handler())
        self.uri = f"http://127.0.0.1:{self._http.server_address[1]}/"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        redirect = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # the request line holds the code

            def do_GET(self) -> None:
                query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
                ours = query.get("state") == redirect.state
                text = "Signed in: you can close this tab." if ours and "code" in query else "Sign-in failed."
                raw = text.encode()
                self.send_response(200 if ours else 400)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                if ours:
                    redirect.query = query
                    redirect.done.set()

        return Handler

    def wait(self, seconds: float) -> dict[str, str] | None:
        self._http.timeout = 1.0
        deadline = time.monotonic() + seconds
        try:
            while not self.done.is_set() and time.monotonic() < deadline:
                self._http.handle_request()
        finally:
            self._http.server_close()
        return self.query


def _browser_flow(sign_in: SignIn, out: TextIO) -> dict[str, Any]:
    settings = sign_in.settings
    assert settings.auth_url is not None
    verifier, challenge = _pkce()
    redirect = _Redirect(secrets.token_urlsafe(16))
    query = {
        "response_type": "code",
        "client_id": settings.client_id,
        "redirect_uri": redirect.uri,
        "state": redirect.state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **_scope(settings),
    }
    separator = "&" if urlsplit(settings.auth_url).query else "?"
    address = f"{settings.auth_url}{separator}{urlencode(query)}"
    print(f"To sign in, open this address in a browser on this machine:\n{address}", file=out, flush=True)
    answer = redirect.wait(sign_in.wait_seconds)
    if answer is None:
        raise SignInFailed("The browser did not come back in time; run imap-mcp auth again.")
    if "code" not in answer:
        hidden = [settings.client_secret.reveal()] if settings.client_secret else []
        said = excerpt(answer.get("error", "no code"), hidden)
        raise SignInFailed(f"The provider did not sign you in ({said}); run imap-mcp auth again.")
    return post_form(
        settings,
        settings.token_url,
        {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": redirect.uri,
            "code_verifier": verifier,
        },
    )
