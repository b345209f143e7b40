"""Who may talk to the HTTP endpoint: Host/Origin validation and bearer tokens.

Every request is checked on its own — there is no session to remember a caller by. The order:
`/healthz` answers without checks (for load balancers); a Host not in the allowed list gets
421, an Origin whose host is not in it gets 403; then, when tokens are configured, a request
without a valid `Authorization: Bearer` token gets 401 with `WWW-Authenticate`. A valid token
becomes the request's *principal* (a digest of the token, never the token itself), which is
bound into every approval, so an approval one caller obtained cannot be used by another. A
2025-11-25 session (whose dialogs are pushed, not sealed) belongs to the token that opened it:
another token presenting its session id gets 403.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from mcp.server.context import ServerRequestContext
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from imap_mcp.server.config import ConfigError, Secret, is_loopback

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
MIN_TOKEN_LENGTH = 16
PRINCIPAL_STATE_KEY = "imap_mcp_principal"
HEALTH_PATH = "/healthz"
LegacyHttpMode = Literal["session", "stateless"]


@dataclass(frozen=True)
class HttpSettings:
    #: IMAP_MCP_ALLOWED_HOSTS: host names (port ignored) accepted in Host and Origin; ("*",) = any
    allowed_hosts: tuple[str, ...] = LOCAL_HOSTS
    #: IMAP_MCP_AUTH_TOKENS: bearer tokens; empty = no authentication (loopback use only)
    auth_tokens: tuple[Secret, ...] = field(default=(), repr=False)
    #: IMAP_MCP_LEGACY_HTTP: how 2025-11-25 HTTP clients are served
    legacy_http: LegacyHttpMode = "session"
    #: IMAP_MCP_ALLOW_UNAUTHENTICATED: serve a non-loopback address without tokens (a gateway authenticates)
    allow_unauthenticated: bool = False


def _host_name(value: str) -> str:
    """`Example.com:8000` → `example.com`; `[::1]:80` → `[::1]`."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def load_http_settings(env: Mapping[str, str]) -> HttpSettings:
    raw_hosts = env.get("IMAP_MCP_ALLOWED_HOSTS", "").strip()
    hosts = tuple(_host_name(h) for h in raw_hosts.split(",") if h.strip()) if raw_hosts else LOCAL_HOSTS
    tokens = tuple(t.strip() for t in env.get("IMAP_MCP_AUTH_TOKENS", "").split(",") if t.strip())
    for position, token in enumerate(tokens, start=1):
        if len(token) < MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"IMAP_MCP_AUTH_TOKENS token {position} is too short: use comma-separated random tokens of at "
                f"least {MIN_TOKEN_LENGTH} characters (e.g. from: openssl rand -hex 24)."
            )
    legacy = env.get("IMAP_MCP_LEGACY_HTTP", "session")
    if legacy not in ("session", "stateless"):
        raise ConfigError(f"IMAP_MCP_LEGACY_HTTP={legacy!r} is not valid: use session or stateless.")
    allow = env.get("IMAP_MCP_ALLOW_UNAUTHENTICATED", "false")
    if allow not in ("true", "false"):
        raise ConfigError(f"IMAP_MCP_ALLOW_UNAUTHENTICATED={allow!r} is not valid: use true or false.")
    return HttpSettings(
        allowed_hosts=hosts,
        auth_tokens=tuple(Secret(t) for t in tokens),
        legacy_http=legacy,  # type: ignore[arg-type]
        allow_unauthenticated=allow == "true",
    )


def require_authentication_off_loopback(host: str, settings: HttpSettings) -> None:
    """`ConfigError` when serving `host` would let anyone who reaches it use the mailbox unauthenticated."""
    if is_loopback(host) or settings.auth_tokens or settings.allow_unauthenticated:
        return
    raise ConfigError(
        f"refusing to serve on {host} without IMAP_MCP_AUTH_TOKENS: anyone who can reach it could use the mailbox. "
        "Set IMAP_MCP_AUTH_TOKENS (e.g. from: openssl rand -hex 24), or IMAP_MCP_ALLOW_UNAUTHENTICATED=true when a "
        "gateway in front authenticates every request."
    )


def principal_for_token(token: str) -> str:
    """The identity a token stands for: a digest, so logs and seals never carry the token."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]


def principal_of_scope(scope: Mapping[str, Any]) -> str | None:
    state = scope.get("state") or {}
    value = state.get(PRINCIPAL_STATE_KEY)
    return value if isinstance(value, str) else None


def request_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The principal `AccessControl` put on this HTTP request; None on stdio or without tokens."""
    request = getattr(ctx, "request", None)
    return principal_of_scope(request.scope) if request is not None else None


class SessionOwners:
    """Which principal opened each 2025-11-25 HTTP session, so no other token can use its session id.

    Legacy sessions live in the memory of the process that made them (that is what makes them
    need sticky routing), so remembering their owners here adds no state a replica would miss.
    Bounded: the oldest entries go first, like the SDK's own session limit.
    """

    def __init__(self, limit: int = 10_000) -> None:
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._limit = limit

    def record(self, session_id: str, principal: str) -> None:
        self._owners[session_id] = principal
        while len(self._owners) > self._limit:
            self._owners.popitem(last=False)

    def others_session(self, session_id: str, principal: str) -> bool:
        owner = self._owners.get(session_id)
        return owner is not None and owner != principal


class AccessControl:
    """ASGI middleware enforcing `HttpSettings` in front of the MCP app."""

    def __init__(self, app: ASGIApp, settings: HttpSettings) -> None:
        self.app = app
        self.settings = settings
        self._any_host = "*" in settings.allowed_hosts
        self._sessions = SessionOwners()

    def _host_allowed(self, host: str | None) -> bool:
        return self._any_host or (host is not None and _host_name(host) in self.settings.allowed_hosts)

    def _origin_allowed(self, origin: str | None) -> bool:
        if origin is None or self._any_host:
            return True
        netloc = urlsplit(origin).netloc
        return bool(netloc) and _host_name(netloc) in self.settings.allowed_hosts

    def _principal(self, authorization: str | None) -> str | None:
        """The principal of a valid bearer token, else None (compared in constant time)."""
        if not authorization or authorization[:7].lower() != "bearer ":
            return None
        presented = authorization[7:].strip().encode()
        match = None
        for token in self.settings.auth_tokens:
            if hmac.compare_digest(presented, token.reveal().encode()):
                match = token.reveal()
        return principal_for_token(match) if match else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path") == HEALTH_PATH:
            await _respond(send, 200, {"status": "ok"})
            return
        headers = Headers(scope=scope)
        if not self._host_allowed(headers.get("host")):
            await _respond(send, 421, _error("Host not allowed: add it to IMAP_MCP_ALLOWED_HOSTS."))
            return
        if not self._origin_allowed(headers.get("origin")):
            await _respond(send, 403, _error("Origin not allowed: add its host to IMAP_MCP_ALLOWED_HOSTS."))
            return
        if not self.settings.auth_tokens:
            await self.app(scope, receive, send)
            return
        principal = self._principal(headers.get("authorization"))
        if principal is None:
            await _respond(
                send,
                401,
                _error("Missing or invalid bearer token."),
                [(b"www-authenticate", b'Bearer realm="imap-mcp", error="invalid_token"')],
            )
            return
        session_id = headers.get("mcp-session-id")
        if session_id is not None and self._sessions.others_session(session_id, principal):
            await _respond(send, 403, _error("This session was opened with another token: open your own session."))
            return
        scope.setdefault("state", {})[PRINCIPAL_STATE_KEY] = principal
        await self.app(scope, receive, self._recording_new_session(send, principal) if session_id is None else send)

    def _recording_new_session(self, send: Send, principal: str) -> Send:
        """A `send` that notes the owner of a session the app opens in its response."""

        async def recording(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", ()):
                    if name.lower() == b"mcp-session-id":
                        self._sessions.record(value.decode("latin-1"), principal)
            await send(message)

        return recording


def _error(message: str) -> dict[str, Any]:
    """A JSON-RPC error body without an id, as the spec allows on HTTP-level refusals."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}


async def _respond(
    send: Send, status: int, body: Mapping[str, Any], extra_headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": payload})
