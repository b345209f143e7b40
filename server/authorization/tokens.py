"""An access token (a JWT, RFC 9068) verified, and who it stands for.

A token is accepted only when all of this holds: its header names an asymmetric algorithm
(`ALGORITHMS`: never `none`, never an HMAC one, so a public key can never serve as an HMAC
secret), the key its `kid` names is in the issuer's key set (`keys`) and is of that algorithm
(the key's own `alg` when the set declares one, else its type's), the signature is the key's,
`iss` is `IMAP_MCP_OAUTH_ISSUER` exactly, `aud` is (or lists) `IMAP_MCP_OAUTH_AUDIENCE` exactly
(RFC 8707: a token for another resource is refused), `exp` is in the future and `nbf`, when
present, in the past, both within `CLOCK_SKEW_SECONDS`, and `sub` is there. Anything else is
`TokenRefused`, whose message says which check failed and never holds the token.

The token's principal (what approvals and 2025-11-25 sessions are bound to) is a digest of its
issuer and subject: the same person is the same principal on every replica and with every token
the authorization server gives them, and no log or seal carries the subject itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import jwt

from ..errors import ImapMcpError
from .keys import Jwk, SigningKeys
from .settings import CLOCK_SKEW_SECONDS, ResourceServerSettings

#: the signature algorithms a token may use: asymmetric ones only
ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
#: where `AccessControl` puts the `Identity` of a request that carried an access token (the ASGI scope's state)
IDENTITY_STATE_KEY = "imap_mcp_identity"
#: the claims a token must carry
REQUIRED_CLAIMS = ("iss", "aud", "exp", "sub")


class TokenRefused(ImapMcpError):
    """The bearer token is not one this server accepts; the message says which check failed."""


@dataclass(frozen=True)
class Identity:
    """Who a verified access token stands for, and what it allows."""

    #: what approvals and sessions are bound to: a digest of issuer and subject
    principal: str
    issuer: str
    subject: str
    #: the token's scopes this server recognises (`IMAP_MCP_OAUTH_SCOPES`)
    scopes: frozenset[str]
    #: every claim of the token (the account a token reaches is chosen by one of them)
    claims: dict[str, Any]


def principal_for_subject(issuer: str, subject: str) -> str:
    """The principal of `subject` at `issuer`: a digest, never the subject itself."""
    return "oauth:" + hashlib.sha256(f"{issuer}\0{subject}".encode()).hexdigest()[:16]


def _granted_scopes(claims: dict[str, Any], recognised: tuple[str, ...]) -> frozenset[str]:
    """The scopes of `scope` (space-separated, RFC 9068) or `scp` (a list, as Entra writes it) we recognise."""
    raw = claims.get("scope", claims.get("scp", ""))
    given = (
        raw.split() if isinstance(raw, str) else [s for s in raw if isinstance(s, str)] if isinstance(raw, list) else []
    )
    return frozenset(given) & frozenset(recognised)


def _key_for(published: Jwk, algorithm: str) -> jwt.PyJWK:
    """`published` as a key of `algorithm`: its declared `alg` when it has one, else one its type allows."""
    if published.get("alg", algorithm) != algorithm:
        raise TokenRefused("the token's algorithm is not the one its key is published for")
    try:
        return jwt.PyJWK(published, algorithm=algorithm)
    except (jwt.PyJWKError, jwt.InvalidKeyError):
        raise TokenRefused("the token's algorithm does not fit its key's type") from None


class TokenVerifier:
    """Verifies access tokens of one issuer for one resource (see the module's docstring)."""

    def __init__(self, settings: ResourceServerSettings, keys: SigningKeys | None = None) -> None:
        self.settings = settings
        self._keys = keys or SigningKeys(settings)

    async def identify(self, token: str) -> Identity:
        """The identity of `token`, or `TokenRefused`; `KeysUnavailable` when the keys could never be fetched."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise TokenRefused("the bearer token is not a JWT") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise TokenRefused(f"the token's algorithm {str(algorithm)[:20]!r} is not an asymmetric one accepted here")
        kid = header.get("kid", "")
        published = await self._keys.key(kid if isinstance(kid, str) else "")
        if published is None:
            raise TokenRefused("the token is signed with a key the authorization server does not publish")
        key = _key_for(published, algorithm)
        claims = self._claims(token, key, algorithm)
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise TokenRefused("the token's sub is not a string")
        issuer = self.settings.issuer
        return Identity(
            principal_for_subject(issuer, subject),
            issuer,
            subject,
            _granted_scopes(claims, self.settings.scopes),
            claims,
        )

    def _claims(self, token: str, key: jwt.PyJWK, algorithm: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=CLOCK_SKEW_SECONDS,
                options={"require": list(REQUIRED_CLAIMS), "strict_aud": False},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("the token is not valid yet (nbf)") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("the token was issued for another resource (aud)") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("the token was issued by another authorization server (iss)") from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRefused(f"the token has no {exc.claim} claim") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("the token's signature does not verify") from None
        except jwt.InvalidTokenError as exc:
            raise TokenRefused(f"the token is not valid ({type(exc).__name__})") from None
        return claims
