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

**One spelling.** A seal opens only in the exact text it was issued as: base64url without
padding, every part canonical (no padding, no characters that lenient decoding would skip, no
spare bits set in a part's last character). And what an approval *is* — `Opened.identity`, from
which a send's Message-ID is derived — comes from its verified content (purpose, principal,
claim, time sealed), never from its text.

**Clock skew.** Replicas' clocks differ a little: a seal dated up to `CLOCK_SKEW` seconds in the
future (made on a replica ahead of this one) still opens.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, TimestampSigner, URLSafeTimedSerializer

from .keyring import KeyRing

Clock = Callable[[], float]

#: seconds a seal may be dated in the future (another replica's clock ahead of this one's)
CLOCK_SKEW = 60
_BASE64URL_PART = re.compile(r"[A-Za-z0-9_-]+")


class SealError(Exception):
    """A seal gives no approval. The message is a reason code for the log, never for the wire.

    A control-flow signal, outside the error tree: the guard turns it into a fresh question or a refusal."""


class BadSeal(SealError):
    """Not a seal this ring made for this purpose and principal, or damaged on the way."""


class SealExpired(SealError):
    """A genuine seal, older than its time to live (or dated in the future)."""


class WrongTarget(SealError):
    """A genuine, fresh seal for another target or another question."""


@dataclass(frozen=True)
class Claim:
    """What a seal vouches was asked: a target fingerprint and a digest of the question shown.

    `pinned` is what the caller's arguments resolved to when the question was asked (opaque here,
    e.g. the UID set a search found), carried so that the answer acts on exactly that and not on
    what the same arguments resolve to later. It is signed like the rest, readable like the rest.
    """

    fingerprint: str
    question: str = ""
    pinned: str = ""


@dataclass(frozen=True)
class Opened:
    """What a verified seal says, and the identity of the approval it carries.

    `identity` is the same for the one spelling a seal opens in and differs between any two
    approvals (another purpose, principal, claim or second of sealing): what derives from an
    approval (a send's Message-ID) is derived from it, never from the seal's text.
    """

    claim: Claim
    sealed_at: int
    identity: str


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
        self._clock = clock

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
        if claim.pinned:
            payload["p"] = claim.pinned
        return self._serializer.dumps(payload, salt=_principal_salt(self.purpose, principal))

    def open(self, token: str, principal: str | None) -> Opened:
        """What `token` says, or `BadSeal` / `SealExpired`."""
        if not isinstance(token, str) or not is_canonical(token):
            raise BadSeal("not a seal in its one canonical spelling")
        salt = _principal_salt(self.purpose, principal)
        try:
            payload: Any
            payload, sealed = self._serializer.loads(token, salt=salt, return_timestamp=True)
        except BadSignature:
            raise BadSeal("signature (tampered, another key, purpose or principal)") from None
        if not (
            isinstance(payload, dict)
            and isinstance(payload.get("fp"), str)
            and isinstance(payload.get("q"), str)
            and isinstance(payload.get("p", ""), str)
        ):
            raise BadSeal("malformed payload")
        sealed_at = int(sealed.timestamp())
        self._check_age(sealed_at)
        claim = Claim(fingerprint=payload["fp"], question=payload["q"], pinned=payload.get("p", ""))
        return Opened(claim, sealed_at, _identity(salt, claim, sealed_at))

    def _check_age(self, sealed_at: int) -> None:
        age = int(self._clock()) - sealed_at
        if age > self.ttl:
            raise SealExpired(f"age {age}s > {self.ttl}s")
        if age < -CLOCK_SKEW:
            raise SealExpired(f"dated {-age}s in the future (more than the {CLOCK_SKEW}s of clock skew allowed)")

    def verify(self, token: str, expected: Claim, principal: str | None) -> Opened:
        """What `token` says, only if it is a fresh seal of exactly `expected` for `principal`."""
        opened = self.open(token, principal)
        if opened.claim.fingerprint != expected.fingerprint:
            raise WrongTarget("another target")
        if opened.claim.question != expected.question:
            raise WrongTarget("another question")
        return opened


def is_canonical(token: str) -> bool:
    """Whether every dot-separated part of `token` is base64url in its one canonical spelling.

    A compressed itsdangerous payload starts with a dot, so an empty first part is allowed.
    """
    parts = token.split(".")
    if len(parts) not in (3, 4) or (len(parts) == 4 and parts[0] != ""):
        return False
    return all(_canonical_part(part) for part in parts[-3:])


def _canonical_part(part: str) -> bool:
    if not _BASE64URL_PART.fullmatch(part):
        return False
    try:
        decoded = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except ValueError:
        return False
    return base64.urlsafe_b64encode(decoded).decode().rstrip("=") == part


def _identity(salt: str, claim: Claim, sealed_at: int) -> str:
    content = "\x00".join([salt, claim.fingerprint, claim.question, str(sealed_at)])
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
