"""`IMAP_MCP_OAUTH_ISSUER`, `IMAP_MCP_OAUTH_AUDIENCE`, `IMAP_MCP_OAUTH_SCOPES`, `IMAP_MCP_OAUTH_SUBJECT_CLAIM`: who
issues the access tokens this server accepts, the resource URI they must be issued for, the scopes it recognises,
and the claim that names the person (what an account's `oauth_subjects` lists)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..oauth.settings import endpoint
from ..setting_values import ConfigError

ISSUER = "IMAP_MCP_OAUTH_ISSUER"
AUDIENCE = "IMAP_MCP_OAUTH_AUDIENCE"
SCOPES = "IMAP_MCP_OAUTH_SCOPES"
SUBJECT_CLAIM = "IMAP_MCP_OAUTH_SUBJECT_CLAIM"
#: every scope a tool can need (`scopes.SCOPE_OF`), in the order they are advertised
ALL_SCOPES = ("mail.read", "mail.change", "mail.send", "mail.webhooks")
#: seconds a token's `exp` and `nbf` may be off by (the clocks of this host and the authorization server)
CLOCK_SKEW_SECONDS = 60


@dataclass(frozen=True)
class ResourceServerSettings:
    #: IMAP_MCP_OAUTH_ISSUER: the authorization server's issuer identifier, compared exactly with `iss`
    issuer: str
    #: IMAP_MCP_OAUTH_AUDIENCE: this server's resource URI (RFC 8707), e.g. https://mail.example.com/mcp
    audience: str
    #: IMAP_MCP_OAUTH_SCOPES: the scopes recognised in a token (and advertised); others grant nothing
    scopes: tuple[str, ...] = ALL_SCOPES
    #: IMAP_MCP_OAUTH_SUBJECT_CLAIM: the claim whose value an account's `oauth_subjects` lists (`sub`, `email`, …)
    subject_claim: str = "sub"
    #: seconds a request to the authorization server (its metadata, its keys) may take in all
    timeout: float = 10.0


def _audience(env: Mapping[str, str]) -> str:
    raw = (endpoint(env, AUDIENCE) or "").strip()
    parts = urlsplit(raw)
    if not raw or parts.query or parts.fragment or raw.endswith("/"):
        raise ConfigError(
            f"{AUDIENCE}={raw!r} is not valid: give this server's resource URI as clients use it, e.g. "
            "https://mail.example.com/mcp (no query, fragment or trailing slash)."
        )
    return raw


def _scopes(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get(SCOPES, "").replace(",", " ").split()
    if not raw:
        return ALL_SCOPES
    unknown = [s for s in raw if s not in ALL_SCOPES]
    if unknown:
        raise ConfigError(
            f"{SCOPES} names unknown scopes ({', '.join(unknown)}): use space-separated scopes from "
            f"{' '.join(ALL_SCOPES)}."
        )
    return tuple(s for s in ALL_SCOPES if s in raw)


def load_resource_server_settings(env: Mapping[str, str]) -> ResourceServerSettings | None:
    """The settings, or None when `IMAP_MCP_OAUTH_ISSUER` is unset (no OAuth: static bearer tokens only)."""
    issuer = endpoint(env, ISSUER)
    if issuer is None:
        for name in (AUDIENCE, SCOPES, SUBJECT_CLAIM):
            if env.get(name, "").strip():
                raise ConfigError(f"{name} is set without {ISSUER}: set the issuer too, or unset {name}.")
        return None
    claim = env.get(SUBJECT_CLAIM, "").strip() or "sub"
    return ResourceServerSettings(issuer=issuer, audience=_audience(env), scopes=_scopes(env), subject_claim=claim)
