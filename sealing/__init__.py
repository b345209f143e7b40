"""Sealing: approvals bound to the exact target, under a rotating key ring.

Pure: imports neither IMAP nor MCP code. `fingerprint` turns a `Target` into canonical bytes
and a digest; `seal` signs a `Claim` (fingerprint + question digest) with a `KeyRing`.
"""

from .fingerprint import Target, canonical_bytes, fingerprint
from .keyring import KeyRing
from .seal import CLOCK_SKEW, BadSeal, Claim, Opened, Sealer, SealError, SealExpired, WrongTarget, question_digest

__all__ = [
    "CLOCK_SKEW",
    "BadSeal",
    "Claim",
    "KeyRing",
    "Opened",
    "SealError",
    "SealExpired",
    "Sealer",
    "Target",
    "WrongTarget",
    "canonical_bytes",
    "fingerprint",
    "question_digest",
]
