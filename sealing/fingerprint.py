"""The exact target of an approval, and its canonical fingerprint.

An approval covers one `Target`, nothing near it. A target is what any guarded change is made
of, in words that belong to no protocol:

- `operation`: what is done (move and copy differ, so do trash and permanent delete, send and reply);
- `account`: whose data it is done to;
- `scopes`: the named things it is done in or to, each with the version numbers that pin the state
  it was in when the person was asked (e.g. a mailbox `source` with its UIDVALIDITY, a `destination`,
  a `sender`). Scopes are keyed by name, so their order does not matter;
- `items`: the exact set of items acted on, sorted and de-duplicated (so `[2, 1, 1]` and `[1, 2]`
  are one target);
- `content`: a digest of what the change carries (the message a send hands out).

Whatever differs in any of these gives another fingerprint, so an approval for items `[1]` does
not cover `[1, 2]`, one for `Archive` does not cover `Public/Shared`, and one given before a
scope's version changed (a mailbox re-created) does not cover it after.

The canonical form is JSON with sorted keys and no spaces.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

FORMAT = "imap-mcp/target/v2"


@dataclass(frozen=True)
class Scope:
    """One named thing an approval is bound to: its `name` (role), `value`, and the numbers pinning its state."""

    name: str
    value: str
    version: tuple[int, ...] = ()


@dataclass(frozen=True)
class Target:
    """What one approval is for. Scopes are sorted by name (each name at most once); items sorted and unique."""

    operation: str
    account: str
    scopes: tuple[Scope, ...] = field(default=())
    items: tuple[int, ...] = field(default=())
    content: str | None = None

    def __post_init__(self) -> None:
        scopes = tuple(sorted(self.scopes, key=lambda scope: scope.name))
        names = [scope.name for scope in scopes]
        if len(set(names)) != len(names):
            raise ValueError(f"a target names each scope at most once; got {names}")
        object.__setattr__(self, "scopes", scopes)
        object.__setattr__(self, "items", tuple(sorted(set(self.items))))

    def scope(self, name: str) -> Scope | None:
        """The scope called `name`, if the target has one."""
        return next((scope for scope in self.scopes if scope.name == name), None)


def canonical_bytes(target: Target) -> bytes:
    """The one byte string every replica derives from `target`."""
    body = {
        "format": FORMAT,
        "operation": target.operation,
        "account": target.account,
        "scopes": [[scope.name, scope.value, list(scope.version)] for scope in target.scopes],
        "items": list(target.items),
        "content": target.content,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def fingerprint(target: Target) -> str:
    """SHA-256 of the canonical bytes, as hex."""
    return hashlib.sha256(canonical_bytes(target)).hexdigest()
