"""A small OAuth 2.0 authorization server on loopback, for the tests (stdlib http.server, in a thread).

    with AuthorizationServer(expires_in=2, rotate=True) as provider:
        refresh_token = provider.sign_in("t-abc")          # as if the person had signed in
        ... imap-mcp uses provider.token_url; Dovecot asks provider.introspection_url ...
        provider.refreshes                                  # how many refresh_token grants it answered

Token endpoint (refresh_token, device_code and authorization_code grants, client secret in the
body or as HTTP Basic), rotation of refresh tokens, `invalid_grant` for a revoked or unknown one,
the device authorization endpoint (RFC 8628), the authorization endpoint of the loopback-redirect
flow with PKCE S256 (it signs `browser_user` in at once and redirects), and RFC 7662
introspection for Dovecot's oauth2 passdb. Every token it issued is in `issued`, so a test can
check that none leaked into any output.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

CLIENT_ID = "imap-mcp-tests"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@dataclass
class _AccessToken:
    user: str
    expires_at: float


@dataclass
class _DeviceCode:
    user_code: str
    user: str | None = None


@dataclass(frozen=True)
class _AuthorizationCode:
    user: str
    redirect_uri: str
    challenge: str


class AuthorizationServer:
    def __init__(
        self,
        *,
        expires_in: int = 3600,
        rotate: bool = False,
        client_secret: str | None = None,
        basic_auth: bool = False,
    ) -> None:
        self.expires_in = expires_in
        self.rotate = rotate
        self.client_secret = client_secret
        self.basic_auth = basic_auth
        self.browser_user = "signed-in-user"
        self.refreshes = 0
        self.token_requests = 0
        #: answer every token request with this HTTP status and no OAuth error (an outage)
        self.fail_with: int | None = None
        self.refused_refreshes = 0
        self.introspections = 0
        self.issued: set[str] = set()
        #: set while a refresh waits for `release_refreshes` (tests of concurrent callers)
        self.refresh_arrived = threading.Event()
        self.release_refreshes = threading.Event()
        self.release_refreshes.set()
        self._refresh_tokens: dict[str, str] = {}
        self._access_tokens: dict[str, _AccessToken] = {}
        self._device_codes: dict[str, _DeviceCode] = {}
        self._codes: dict[str, _AuthorizationCode] = {}
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    token_url = property(lambda self: f"{self.base}/token")
    device_url = property(lambda self: f"{self.base}/device")
    auth_url = property(lambda self: f"{self.base}/authorize")
    introspection_url = property(lambda self: f"{self.base}/introspect")

    def __enter__(self) -> AuthorizationServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release_refreshes.set()
        self._http.shutdown()
        self._http.server_close()

    def env(self) -> dict[str, str]:
        """The IMAP_OAUTH_* settings of a client of this server (without the refresh token)."""
        env = {"IMAP_AUTH": "oauth2", "IMAP_OAUTH_TOKEN_URL": self.token_url, "IMAP_OAUTH_CLIENT_ID": CLIENT_ID}
        if self.client_secret:
            env["IMAP_OAUTH_CLIENT_SECRET"] = self.client_secret
        if self.basic_auth:
            env["IMAP_OAUTH_CLIENT_AUTH"] = "basic"
        return env

    # --- what a person or an administrator does ---

    def sign_in(self, user: str) -> str:
        """A refresh token for `user`, as a finished sign-in would have given."""
        with self._lock:
            return self._new_refresh_token(user)

    def revoke(self, user: str) -> None:
        """Every refresh token of `user` is refused from now on (invalid_grant)."""
        with self._lock:
            self._refresh_tokens = {t: u for t, u in self._refresh_tokens.items() if u != user}

    def expire_access_tokens(self) -> None:
        """Every access token issued so far is no longer active, as if its lifetime had run out."""
        with self._lock:
            self._access_tokens.clear()

    def approve_device(self, user_code: str, user: str) -> None:
        with self._lock:
            for pending in self._device_codes.values():
                if pending.user_code == user_code:
                    pending.user = user
                    return
        raise KeyError(user_code)

    def token_is_active(self, user: str, token: str) -> bool:
        with self._lock:
            found = self._access_tokens.get(token)
            return found is not None and found.user == user and found.expires_at > time.time()

    def leaked(self, text: str) -> list[str]:
        """The issued tokens that appear in `text` (shortened, so the test output does not leak them either)."""
        with self._lock:
            return [t[:6] + "…" for t in self.issued if t in text]

    # --- the endpoints ---

    def _new_refresh_token(self, user: str) -> str:
        token = "rt-" + secrets.token_urlsafe(24)
        self._refresh_tokens[token] = user
        self.issued.add(token)
        return token

    def _tokens_for(self, user: str, refresh_token: str | None = None) -> dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(24)
        self._access_tokens[access] = _AccessToken(user, time.time() + self.expires_in)
        self.issued.add(access)
        answer: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in}
        if refresh_token is None or self.rotate:
            if refresh_token is not None:
                del self._refresh_tokens[refresh_token]
            answer["refresh_token"] = self._new_refresh_token(user)
        return answer

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        grant = form.get("grant_type")
        with self._lock:
            self.token_requests += 1
            if self.fail_with is not None:
                return self.fail_with, {"message": "temporarily unavailable"}
        if grant == "refresh_token":
            self.refresh_arrived.set()
            self.release_refreshes.wait(30)
        with self._lock:
            if grant == "refresh_token":
                user = self._refresh_tokens.get(form.get("refresh_token", ""))
                if user is None:
                    self.refused_refreshes += 1
                    return 400, {"error": "invalid_grant", "error_description": "refresh token revoked or unknown"}
                self.refreshes += 1
                return 200, self._tokens_for(user, form["refresh_token"])
            if grant == DEVICE_GRANT:
                pending = self._device_codes.get(form.get("device_code", ""))
                if pending is None:
                    return 400, {"error": "expired_token"}
                if pending.user is None:
                    return 400, {"error": "authorization_pending"}
                del self._device_codes[form["device_code"]]
                return 200, self._tokens_for(pending.user)
            if grant == "authorization_code":
                code = self._codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if code is None or code.redirect_uri != form.get("redirect_uri") or code.challenge != digest:
                    return 400, {"error": "invalid_grant"}
                return 200, self._tokens_for(code.user)
        return 400, {"error": "unsupported_grant_type"}

    def device(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        device_code, user_code = secrets.token_urlsafe(16), secrets.token_hex(4).upper()
        with self._lock:
            self._device_codes[device_code] = _DeviceCode(user_code)
        return 200, {
            "device_code": device_code,
            "user_code": user_code,
            "verification_uri": f"{self.base}/device/verify",
            "expires_in": 600,
            "interval": 1,
        }

    def authorize(self, query: dict[str, str]) -> str:
        """Sign `browser_user` in; the Location to redirect the browser to."""
        if query.get("code_challenge_method") != "S256" or query.get("response_type") != "code":
            refusal = {"error": "invalid_request", "state": query.get("state", "")}
            return f"{query['redirect_uri']}?" + urlencode(refusal)
        code = secrets.token_urlsafe(16)
        with self._lock:
            self._codes[code] = _AuthorizationCode(self.browser_user, query["redirect_uri"], query["code_challenge"])
        return f"{query['redirect_uri']}?" + urlencode({"code": code, "state": query.get("state", "")})

    def introspect(self, form: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            self.introspections += 1
            found = self._access_tokens.get(form.get("token", ""))
            if found is None or found.expires_at <= time.time():
                return {"active": False}
            return {"active": True, "username": found.user, "token_type": "Bearer"}

    def client_ok(self, form: dict[str, str], authorization: str | None) -> bool:
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.startswith("Basic "):
            if not self.basic_auth:
                return False
            pair = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = (unquote(p) for p in pair.partition(":"))
        elif self.basic_auth and self.client_secret:
            return False
        return client_id == CLIENT_ID and secret == self.client_secret


def _handler_for(server: AuthorizationServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: request lines hold codes

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            path = urlsplit(self.path).path
            if path == "/introspect":
                self._answer(200, server.introspect(form))
            elif not server.client_ok(form, self.headers.get("Authorization")):
                self._answer(401, {"error": "invalid_client"})
            elif path == "/token":
                self._answer(*server.token(form))
            elif path == "/device":
                self._answer(*server.device(form))
            else:
                self._answer(404, {"error": "not_found"})

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path != "/authorize":
                self._answer(404, {"error": "not_found"})
                return
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            self.send_response(302)
            self.send_header("Location", server.authorize(query))
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler
