"""Who may talk to the HTTP endpoint: Host/Origin validation and bearer tokens.

Every request is checked on its own — there is no session to remember a caller by. The order:
`/healthz` answers without checks (for load balancers); a Host not in the allowed list gets
421, an Origin whose host is not in it gets 403; then, when tokens are configured, a request
without a valid `Authorization: Bearer` token gets 401 with `WWW-Authenticate`. A valid token
becomes the request's *principal* (a digest of the token, never the token itself), which is
bound into every approval, so an approval one caller obtained cannot be used by another.

A request body larger than `MAX_BODY_BYTES` is refused (413) before anything reads it when its
Content-Length says so, and as soon as it grows past the limit otherwise, on every path.

2025-11-25 sessions (whose dialogs are pushed, not sealed) are kept in a `SessionTable`: each
belongs to the caller that opened it (a token, or everyone when no tokens are configured) for as
long as it lives — another token presenting its id gets 403, an id the table does not know gets
404 — and each caller may hold at most `HttpSettings.sessions_per_caller` of them (429 beyond), so
no caller can fill the server for the others. A session ends when closed (DELETE) or after
`HttpSettings.session_idle_seconds` without a request in flight.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..authorization.keys import KeysUnavailable
from ..authorization.metadata import challenge
from ..authorization.settings import ResourceServerSettings, load_resource_server_settings
from ..authorization.tokens import IDENTITY_STATE_KEY, TokenRefused, TokenVerifier
from ..config import MIN_TOKEN_LENGTH
from ..setting_values import ConfigError, Secret, is_loopback

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
logger = logging.getLogger("imap_mcp")
PRINCIPAL_STATE_KEY = "imap_mcp_principal"
HEALTH_PATH = "/healthz"
LegacyHttpMode = Literal["session", "stateless"]
#: the largest request body accepted on any path (the SDK's own limit)
MAX_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
#: the owner of sessions opened without a token (when no tokens are configured)
EVERYONE = "everyone"


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
    #: 2025-11-25 sessions one caller (a token; everyone, without tokens) may hold open at once
    sessions_per_caller: int = 32
    #: a 2025-11-25 session ends after this many seconds without a request in flight
    session_idle_seconds: float = DEFAULT_SESSION_IDLE_TIMEOUT
    #: IMAP_MCP_OAUTH_*: OAuth access tokens accepted too (MCP authorization); None = static tokens only
    oauth: ResourceServerSettings | None = None


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
        oauth=load_resource_server_settings(env),
    )


def require_authentication_off_loopback(host: str, settings: HttpSettings) -> None:
    """`ConfigError` when serving `host` would let anyone who reaches it use the mailbox unauthenticated."""
    if is_loopback(host) or settings.auth_tokens or settings.oauth or settings.allow_unauthenticated:
        return
    raise ConfigError(
        f"refusing to serve on {host} without IMAP_MCP_AUTH_TOKENS: anyone who can reach it could use the mailbox. "
        "Set IMAP_MCP_AUTH_TOKENS (e.g. from: openssl rand -hex 24) or IMAP_MCP_OAUTH_ISSUER, or "
        "IMAP_MCP_ALLOW_UNAUTHENTICATED=true when a "
        "gateway in front authenticates every request."
    )


def principal_for_token(token: str) -> str:
    """The identity a token stands for: a digest, so logs and seals never carry the token."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]


class Tokens:
    """The bearer tokens accepted now, found by their digest (one look-up however many there are) and then
    compared in constant time; replaced whole when the accounts file is reloaded (`replace`)."""

    def __init__(self, tokens: Iterable[Secret] = ()) -> None:
        self._by_digest: dict[bytes, bytes] = {}
        self.replace(tokens)

    def replace(self, tokens: Iterable[Secret]) -> None:
        self._by_digest = {hashlib.sha256(t.reveal().encode()).digest(): t.reveal().encode() for t in tokens}

    def principal(self, presented: str) -> str | None:
        """The principal of `presented` when it is one of the tokens, else None."""
        raw = presented.encode()
        token = self._by_digest.get(hashlib.sha256(raw).digest())
        if token is None or not hmac.compare_digest(raw, token):
            return None
        return principal_for_token(token.decode())


def principal_of_scope(scope: Mapping[str, Any]) -> str | None:
    state = scope.get("state") or {}
    value = state.get(PRINCIPAL_STATE_KEY)
    return value if isinstance(value, str) else None


def request_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The principal `AccessControl` put on this HTTP request; None on stdio or without tokens."""
    request = getattr(ctx, "request", None)
    return principal_of_scope(request.scope) if request is not None else None


@dataclass
class _Session:
    owner: str
    in_flight: int = 0


class SessionTable:
    """The 2025-11-25 HTTP sessions of this process, each with the caller that opened it.

    Legacy sessions live in the memory of the process that made them (that is what makes them
    need sticky routing), so keeping their owners here adds no state a replica would miss. An
    entry goes only when its session can no longer be used: closed (DELETE answered), reported
    gone by the SDK (404), or without a request in flight for longer than the SDK's idle timeout
    (measured from when our middleware saw the last request end, which is never before the SDK
    did, so the SDK has closed the session by then). No other eviction: while a session lives,
    nobody else can take it over. Each caller may hold `per_caller` sessions (opening ones count).
    Every operation takes constant (amortised) time, however many sessions there are.
    """

    def __init__(self, per_caller: int, idle_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._sessions: dict[str, _Session] = {}
        self._idle: OrderedDict[str, float] = OrderedDict()  #: sessions with nothing in flight, oldest first
        self._held: Counter[str] = Counter()  #: sessions per caller, open or opening
        self._per_caller = per_caller
        self._idle_seconds = idle_seconds
        self._clock = clock

    def owner(self, session_id: str) -> str | None:
        self._expire()
        found = self._sessions.get(session_id)
        return found.owner if found else None

    def admit(self, caller: str) -> bool:
        """Reserve room for one more session of `caller`; False when it already holds `per_caller`."""
        self._expire()
        if self._held[caller] >= self._per_caller:
            return False
        self._held[caller] += 1
        return True

    def admitted(self, caller: str, opened: bool) -> None:
        """The opening request of a reservation ended; without a session opened, its room is given back."""
        if not opened:
            self._release(caller)

    def opened(self, session_id: str, caller: str) -> None:
        self._sessions[session_id] = _Session(caller, in_flight=1)

    def enter(self, session_id: str) -> None:
        found = self._sessions.get(session_id)
        if found is not None:
            found.in_flight += 1
            self._idle.pop(session_id, None)

    def leave(self, session_id: str) -> None:
        found = self._sessions.get(session_id)
        if found is not None:
            found.in_flight -= 1
            if found.in_flight <= 0:
                self._idle[session_id] = self._clock()
                self._idle.move_to_end(session_id)

    def closed(self, session_id: str) -> None:
        found = self._sessions.pop(session_id, None)
        self._idle.pop(session_id, None)
        if found is not None:
            self._release(found.owner)

    def _release(self, caller: str) -> None:
        self._held[caller] -= 1
        if self._held[caller] <= 0:
            del self._held[caller]

    def _expire(self) -> None:
        deadline = self._clock() - self._idle_seconds
        while self._idle and next(iter(self._idle.values())) < deadline:
            self.closed(next(iter(self._idle)))


class AccessControl:
    """ASGI middleware enforcing `HttpSettings` in front of the MCP app."""

    def __init__(
        self, app: ASGIApp, settings: HttpSettings, tokens: Tokens | None = None, verifier: TokenVerifier | None = None
    ) -> None:
        """`tokens` (default: `settings.auth_tokens`, fixed) may be replaced while serving; given, a token is
        always required. `verifier` accepts OAuth access tokens too (`settings.oauth`)."""
        self.app = app
        self.settings = settings
        self._tokens = tokens if tokens is not None else Tokens(settings.auth_tokens)
        self._verifier = verifier
        self._token_required = tokens is not None or bool(settings.auth_tokens) or verifier is not None
        self._any_host = "*" in settings.allowed_hosts
        self._sessions = SessionTable(settings.sessions_per_caller, settings.session_idle_seconds)

    def _host_allowed(self, host: str | None) -> bool:
        return self._any_host or (host is not None and _host_name(host) in self.settings.allowed_hosts)

    def _origin_allowed(self, origin: str | None) -> bool:
        if origin is None or self._any_host:
            return True
        netloc = urlsplit(origin).netloc
        return bool(netloc) and _host_name(netloc) in self.settings.allowed_hosts

    async def _principal(self, scope: Scope, presented: str | None) -> str | None:
        """The principal of a valid bearer token (`Tokens.principal`, else an OAuth access token's, whose
        identity goes on the request too), else None."""
        if not presented:
            return None
        principal = self._tokens.principal(presented)
        if principal is not None or self._verifier is None:
            return principal
        try:
            identity = await self._verifier.identify(presented)
        except TokenRefused as exc:
            logger.info("imap-mcp: bearer token refused: %s", exc)
            return None
        scope.setdefault("state", {})[IDENTITY_STATE_KEY] = identity
        return identity.principal

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
        principal = None
        if self._token_required:
            presented = _bearer(headers.get("authorization"))
            try:
                principal = await self._principal(scope, presented)
            except KeysUnavailable as exc:  # none could ever be fetched: the token may well be good
                await _respond(send, 503, _error(f"Cannot check the access token now: {exc}. Try again shortly."))
                return
            if principal is None:
                await respond_unauthorized(send, self._challenge(presented is not None))
                return
            scope.setdefault("state", {})[PRINCIPAL_STATE_KEY] = principal
        if _declared_too_large(headers):
            await _respond(send, 413, _error(TOO_LARGE))
            return
        if self.settings.legacy_http == "session" and _legacy_path(headers):
            await self._serve_legacy(scope, receive, send, principal or EVERYONE, headers.get("mcp-session-id"))
            return
        await self.app(scope, receive, send)

    async def _serve_legacy(
        self, scope: Scope, receive: Receive, send: Send, caller: str, session_id: str | None
    ) -> None:
        """A request on the 2025-11-25 session path: open a session within the caller's bound, or use its own."""
        if session_id is None:
            await self._open_session(scope, receive, send, caller)
            return
        owner = self._sessions.owner(session_id)
        if owner is None:
            await _respond(send, 404, _error("Session not found: it was closed or expired; initialize a new one."))
            return
        if owner != caller:
            await _respond(send, 403, _error("This session was opened with another token: open your own session."))
            return
        self._sessions.enter(session_id)
        status: list[int] = []
        try:
            await self.app(scope, receive, _noting_status(send, status))
        finally:
            self._sessions.leave(session_id)
            if status and (status[0] == 404 or (scope.get("method") == "DELETE" and 200 <= status[0] < 300)):
                self._sessions.closed(session_id)

    async def _open_session(self, scope: Scope, receive: Receive, send: Send, caller: str) -> None:
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)  # the SDK refuses it: only a POST opens a session
            return
        if not self._sessions.admit(caller):
            limit = self.settings.sessions_per_caller
            minutes = round(self.settings.session_idle_seconds / 60)
            await _respond(
                send,
                429,
                _error(
                    f"Too many open sessions for this caller ({limit}): close one (DELETE with its Mcp-Session-Id) "
                    f"or let one expire ({minutes} minutes without requests), then initialize again."
                ),
            )
            return
        opened: list[str] = []
        try:
            await self.app(scope, receive, self._recording_new_session(send, caller, opened))
        finally:
            self._sessions.admitted(caller, opened=bool(opened))
            for session_id in opened:
                self._sessions.leave(session_id)

    def _recording_new_session(self, send: Send, caller: str, opened: list[str]) -> Send:
        """A `send` that notes the owner of a session the app opens in its response."""

        async def recording(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", ()):
                    if name.lower() == b"mcp-session-id":
                        session_id = value.decode("latin-1")
                        self._sessions.opened(session_id, caller)
                        opened.append(session_id)
            await send(message)

        return recording

    def _challenge(self, token_given: bool) -> bytes:
        oauth = self.settings.oauth
        return challenge(oauth, token_given) if oauth is not None and self._verifier is not None else STATIC_CHALLENGE


#: the challenge when only static bearer tokens are accepted
STATIC_CHALLENGE = b'Bearer realm="imap-mcp", error="invalid_token"'


def _bearer(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer …` header, else None."""
    if not authorization or authorization[:7].lower() != "bearer ":
        return None
    return authorization[7:].strip() or None


async def respond_unauthorized(send: Send, www_authenticate: bytes = STATIC_CHALLENGE) -> None:
    """401 with `WWW-Authenticate`: the request carries no valid bearer token."""
    await _respond(send, 401, _error("Missing or invalid bearer token."), [(b"www-authenticate", www_authenticate)])


async def respond_error(send: Send, status: int, message: str) -> None:
    """An HTTP-level refusal: `status` with a JSON-RPC error body saying `message`."""
    await _respond(send, status, _error(message))


TOO_LARGE = f"Request body too large: at most {MAX_BODY_BYTES} bytes."


def _declared_too_large(headers: Headers) -> bool:
    """Whether the Content-Length header alone says the body is over `MAX_BODY_BYTES`."""
    declared = (headers.get("content-length") or "").strip()
    return declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES


def _legacy_path(headers: Headers) -> bool:
    """Whether the SDK serves this request on its 2025-11-25 (session) path: no version header, or a handshake one."""
    version = headers.get("mcp-protocol-version")
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def _noting_status(send: Send, status: list[int]) -> Send:
    async def noting(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(int(message["status"]))
        await send(message)

    return noting


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
