"""An authorization server's public face, served by the test on loopback: its metadata (RFC 8414) and its key set
(JWKS), over real HTTP; and access tokens minted with its private keys, as it would issue them.

Its keys can be rotated while it serves (`rotate`); it counts the key set's fetches (`jwks_fetches`).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

RESOURCE = "http://127.0.0.1:9/mcp"
ALL_SCOPES = "mail.read mail.change mail.send mail.webhooks"


@dataclass
class Issuer:
    url: str = ""
    keys: dict[str, RSAPrivateKey] = field(default_factory=dict)
    current: str = ""
    jwks_fetches: int = 0
    _generation: int = 0

    def rotate(self, keep_old: bool = False) -> str:
        """A new signing key (its kid), which signs from now on; the old ones are dropped unless `keep_old`."""
        self._generation += 1
        kid = f"key-{self._generation}"
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.keys = {**self.keys, kid: key} if keep_old else {kid: key}
        self.current = kid
        return kid

    def jwks(self) -> dict[str, Any]:
        published = []
        for kid, key in self.keys.items():
            entry = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
            published.append({**entry, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": published}

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {"iss": self.url, "aud": RESOURCE, "sub": "alice", "exp": now + 300, "iat": now}
        claims["scope"] = ALL_SCOPES
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, kid: str | None = None, headers: dict[str, Any] | None = None, **claims: Any) -> str:
        """An access token signed with the current key (or `kid`'s), with `claims` over the usual ones."""
        kid = kid or self.current
        return jwt.encode(
            self.claims(**claims), self.keys[kid], algorithm="RS256", headers={"kid": kid, **(headers or {})}
        )

    def metadata(self) -> dict[str, Any]:
        return {"issuer": self.url, "jwks_uri": f"{self.url}/jwks", "token_endpoint": f"{self.url}/token"}


def _handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/.well-known/oauth-authorization-server":
                body = issuer.metadata()
            elif self.path == "/jwks":
                issuer.jwks_fetches += 1
                body = issuer.jwks()
            else:
                self.send_error(404)
                return
            payload = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def serving_issuer() -> Iterator[Issuer]:
    """An `Issuer` with one key, its metadata and key set served on a free loopback port until the block ends."""
    issuer = Issuer()
    issuer.rotate()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(issuer))
    issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
