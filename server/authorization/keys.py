"""The authorization server's signing keys: its JWKS, found through its metadata, cached, followed when rotated.

The metadata (RFC 8414 `/.well-known/oauth-authorization-server`, else OpenID Connect's
`/.well-known/openid-configuration`) must name the configured issuer exactly; its `jwks_uri` is
fetched on first use and again after `MAX_AGE` seconds. A token signed with a key id the cache
does not hold makes one fetch at once (the server rotated its keys), but such fetches happen at
most once every `REFETCH_INTERVAL` seconds, so tokens with made-up key ids cannot make this
server hammer the authorization server (a key rotated in meanwhile is found within that time).
A fetch that fails keeps the keys fetched before, and is tried again after `REFETCH_INTERVAL`.
Only asymmetric keys are kept (RSA, EC, OKP); a symmetric (`oct`) key is never one a token may
be checked with. Every request goes through `outbound_http` (https, or
http on loopback only; no redirect followed; bounded in time and size).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from jwt import PyJWK
from jwt.exceptions import InvalidKeyError, PyJWKError

from ..errors import ImapMcpError
from ..outbound_http import OutboundError, excerpt, get
from .settings import ResourceServerSettings

#: seconds a fetched key set is used before it is fetched again
MAX_AGE = 3600.0
#: the fewest seconds between two fetches a token with an unknown key id causes
REFETCH_INTERVAL = 30.0
#: the largest metadata document or key set read
MAX_DOCUMENT_BYTES = 256 * 1024
ASYMMETRIC_KEY_TYPES = frozenset({"RSA", "EC", "OKP"})

logger = logging.getLogger("imap_mcp")


class KeysUnavailable(ImapMcpError):
    """The authorization server's metadata or keys could not be had; the message says which and why."""


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: RFC 8414's path-inserted URL, then OpenID Connect's appended one."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def _fetch_json(url: str, seconds: float) -> dict[str, Any]:
    """The JSON object at `url` (in a worker thread: `outbound_http.get` runs its own loop)."""
    try:
        answer = get(url, {"Accept": "application/json"}, seconds=seconds, limit=MAX_DOCUMENT_BYTES)
    except OutboundError as exc:
        raise KeysUnavailable(f"{url}: {exc}") from None
    if answer.status != 200 or answer.cut:
        reason = "larger than allowed" if answer.cut else f"HTTP {answer.status}"
        raise KeysUnavailable(f"{url}: {reason}")
    try:
        document = json.loads(answer.body)
    except ValueError:
        raise KeysUnavailable(f"{url}: not JSON ({excerpt(answer.body, limit=60)})") from None
    if not isinstance(document, dict):
        raise KeysUnavailable(f"{url}: not a JSON object")
    return document


def _jwks_uri(settings: ResourceServerSettings) -> str:
    failures = []
    for url in metadata_urls(settings.issuer):
        try:
            metadata = _fetch_json(url, settings.timeout)
        except KeysUnavailable as exc:
            failures.append(str(exc))
            continue
        if metadata.get("issuer") != settings.issuer:
            raise KeysUnavailable(f"{url}: its issuer is not IMAP_MCP_OAUTH_ISSUER exactly")
        uri = metadata.get("jwks_uri")
        if not isinstance(uri, str) or not uri.startswith(("https://", "http://")):
            raise KeysUnavailable(f"{url}: no jwks_uri")
        return uri
    raise KeysUnavailable("no authorization server metadata: " + "; ".join(failures))


#: one key of a key set, as published (a JSON object)
Jwk = dict[str, Any]


def _usable_keys(document: Mapping[str, Any]) -> dict[str, Jwk]:
    """The asymmetric signing keys of a JWKS by key id (a key without `kid` under "")."""
    found: dict[str, Jwk] = {}
    listed = document.get("keys")
    for entry in listed if isinstance(listed, list) else []:
        if not isinstance(entry, dict) or entry.get("kty") not in ASYMMETRIC_KEY_TYPES:
            continue
        if entry.get("use", "sig") != "sig":
            continue
        try:
            PyJWK(entry)
        except (PyJWKError, InvalidKeyError):
            continue  # a key this library cannot use is one no token is checked with
        found.setdefault(str(entry.get("kid", "")), entry)
    return found


class SigningKeys:
    """The cached key set of one issuer; `key` finds a token's key, fetching as the module says."""

    def __init__(self, settings: ResourceServerSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self._clock = clock
        self._keys: dict[str, Jwk] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._unknown_fetched_at: float | None = None
        self._jwks_uri: str | None = None
        self._lock = anyio.Lock()

    async def key(self, kid: str) -> Jwk | None:
        """The key with id `kid`, or None when the authorization server has none by that id; `KeysUnavailable`
        when none was ever fetched (a fetch that fails later leaves the keys fetched before in use)."""
        async with self._lock:
            now = self._clock()
            if self._due(now, kid):
                self._attempted_at = now
                try:
                    await anyio.to_thread.run_sync(self._refresh)
                except KeysUnavailable as exc:
                    logger.warning("imap-mcp: the authorization server's keys could not be fetched: %s", exc)
                    if self._fetched_at is None:
                        raise
            elif self._fetched_at is None:
                raise KeysUnavailable("the authorization server's keys could not be fetched; trying again shortly")
            return self._keys.get(kid)

    def _due(self, now: float, kid: str) -> bool:
        """Whether to fetch the key set now: never fetched or `MAX_AGE` old (a failed attempt waits
        `REFETCH_INTERVAL`), or `kid` unknown and no fetch for an unknown key id within `REFETCH_INTERVAL`."""
        if self._fetched_at is None or now - self._fetched_at >= MAX_AGE:
            return self._attempted_at is None or now - self._attempted_at >= REFETCH_INTERVAL
        if kid in self._keys:
            return False
        if self._unknown_fetched_at is not None and now - self._unknown_fetched_at < REFETCH_INTERVAL:
            return False
        self._unknown_fetched_at = now
        return True

    def _refresh(self) -> None:
        if self._jwks_uri is None:
            self._jwks_uri = _jwks_uri(self._settings)
        self._keys = _usable_keys(_fetch_json(self._jwks_uri, self._settings.timeout))
        self._fetched_at = self._clock()
