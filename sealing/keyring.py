"""The key ring that seals approvals and confirm tokens.

**The first key seals; every key opens.** That is the SDK's order (`RequestStateSecurity`),
not itsdangerous's (which signs with the last), so one list from `IMAP_MCP_SEAL_KEYS` means
the same thing to both. Rotation without breaking dialogs in flight, each phase rolled out to
every replica before the next: `[old, new]`, then `[new, old]`, then `[new]` after one TTL.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Sequence

MIN_KEY_BYTES = 32


class KeyRing:
    """Secret keys, first one sealing."""

    __slots__ = ("_keys",)

    def __init__(self, keys: Sequence[str | bytes]) -> None:
        material = tuple(k.encode() if isinstance(k, str) else bytes(k) for k in keys)
        if not material:
            raise ValueError("a key ring needs at least one key")
        for position, key in enumerate(material, start=1):
            if len(key) < MIN_KEY_BYTES:
                raise ValueError(
                    f"seal key {position} has {len(key)} bytes; use at least {MIN_KEY_BYTES} random bytes "
                    '(e.g. python -c "import secrets; print(secrets.token_urlsafe(32))")'
                )
            if any(hmac.compare_digest(key, earlier) for earlier in material[: position - 1]):
                raise ValueError(f"seal key {position} repeats an earlier key; each key must be different")
        self._keys = material

    @classmethod
    def random(cls) -> KeyRing:
        """One fresh key known only to this process: seals made here open nowhere else."""
        return cls([secrets.token_bytes(MIN_KEY_BYTES)])

    @property
    def keys(self) -> tuple[bytes, ...]:
        """The keys, the sealing one first."""
        return self._keys

    def __repr__(self) -> str:
        return f"KeyRing({len(self._keys)} key(s))"
