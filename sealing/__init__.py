"""Sealing: approvals bound to the exact target, under a rotating key ring.

Pure: imports neither IMAP nor MCP code and speaks no IMAP. `fingerprint` turns a `Target`
(operation, account, named `Scope`s, sorted items, content digest) into canonical bytes
and a digest; `seal` signs a `Claim` (fingerprint + question digest) with a `KeyRing`.
"""

from .fingerprint import Scope, Target, canonical_bytes, fingerprint
from .keyring import KeyRing
from .seal import CLOCK_SKEW, BadSeal, Claim, Opened, Sealer, SealError, SealExpired, WrongTarget, question_digest

__all__ = [
    "CLOCK_SKEW",
    "BadSeal",
    "Claim",
    "KeyRing",
    "Opened",
    "Scope",
    "SealError",
    "SealExpired",
    "Sealer",
    "Target",
    "WrongTarget",
    "canonical_bytes",
    "fingerprint",
    "question_digest",
]
