"""Seals: HMAC-SHA256 (itsdangerous), timed, bound to a purpose and a principal.

A seal names what was asked (`Claim`: the target's fingerprint and a digest of the question
shown). It is signed, not encrypted: the client can read the claim, which holds only digests.
The purpose (approval state vs. confirm token) and the principal go into the signing key
derivation (the itsdangerous salt), not into the payload: a seal made for another purpose or
another principal simply fails to verify, and no identity is ever written into it.

Outcomes are exceptions, one per case the caller handles the same way ("no approval"), with a
reason code for the server log only: `BadSeal` (malformed, tampered, unknown key, another
principal or purpose), `SealExpired` (genuine but too old; never retried under other keys), and
`WrongTarget` (genuine and fresh, but for something else).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, SignatureExpired, TimestampSigner, URLSafeTimedSerializer

from .keyring import KeyRing

Clock = Callable[[], float]


class SealError(Exception):
    """A seal gives no approval. The message is a reason code for the log, never for the wire."""


class BadSeal(SealError):
    """Not a seal this ring made for this purpose and principal, or damaged on the way."""


class SealExpired(SealError):
    """A genuine seal, older than its time to live (or dated in the future)."""


class WrongTarget(SealError):
    """A genuine, fresh seal for another target or another question."""


@dataclass(frozen=True)
class Claim:
    """What a seal vouches was asked: a target fingerprint and a digest of the question shown."""

    fingerprint: str
    question: str = ""


def question_digest(text: str) -> str:
    """A short digest of the exact question text a person saw."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _principal_salt(purpose: str, principal: str | None) -> str:
    who = "-" if principal is None else hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()
    return f"imap-mcp/{purpose}/v1/principal:{who}"


class Sealer:
    """Seals and opens claims for one purpose with one key ring and time to live (seconds)."""

    def __init__(self, ring: KeyRing, *, purpose: str, ttl: int, clock: Clock = time.time) -> None:
        self.purpose = purpose
        self.ttl = ttl

        class _ClockedSigner(TimestampSigner):
            def get_timestamp(self) -> int:
                return int(clock())

        # itsdangerous signs with its *last* key; reversed, our first key seals.
        self._serializer = URLSafeTimedSerializer(
            list(reversed(ring.keys)),
            signer=_ClockedSigner,
            signer_kwargs={"digest_method": hashlib.sha256, "key_derivation": "hmac"},
        )

    def seal(self, claim: Claim, principal: str | None) -> str:
        payload = {"fp": claim.fingerprint, "q": claim.question}
        return self._serializer.dumps(payload, salt=_principal_salt(self.purpose, principal))

    def open(self, token: str, principal: str | None) -> Claim:
        """The claim inside `token`, or `BadSeal` / `SealExpired`."""
        if not isinstance(token, str) or not token:
            raise BadSeal("empty")
        try:
            payload: Any = self._serializer.loads(
                token, max_age=self.ttl, salt=_principal_salt(self.purpose, principal)
            )
        except SignatureExpired:
            raise SealExpired("expired") from None
        except BadSignature:
            raise BadSeal("signature (tampered, another key, purpose or principal)") from None
        if not (isinstance(payload, dict) and isinstance(payload.get("fp"), str) and isinstance(payload.get("q"), str)):
            raise BadSeal("malformed payload")
        return Claim(fingerprint=payload["fp"], question=payload["q"])

    def verify(self, token: str, expected: Claim, principal: str | None) -> None:
        """Return only if `token` is a fresh seal of exactly `expected` for `principal`."""
        found = self.open(token, principal)
        if found.fingerprint != expected.fingerprint:
            raise WrongTarget("another target")
        if found.question != expected.question:
            raise WrongTarget("another question")
