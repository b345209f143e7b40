"""The exact target of a change, and its canonical fingerprint.

An approval covers one `Target`, nothing near it: the operation (move and copy differ, so do
trash and permanent delete), the account, the source mailbox with its UIDVALIDITY, the exact
UID set, and the destination with its UIDVALIDITY where it exists. Whatever differs in any of
these gives another fingerprint, so an approval for `[1]` does not cover `[1, 2]`, one for
`Archive` does not cover `Public/Shared`, and one given before a mailbox was re-created (new
UIDVALIDITY) does not cover it after.

The canonical form is JSON with sorted keys and no spaces; UIDs are sorted and de-duplicated
first, so `[2, 1, 1]` and `[1, 2]` are one target.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

FORMAT = "imap-mcp/target/v1"


@dataclass(frozen=True)
class Target:
    """What one approval is for. Fields that do not apply to an operation stay None / empty.

    `source_uidnext` and `source_messages` pin a whole mailbox's contents (for deleting a
    mailbox): mail that arrives or leaves after the question was asked gives another target.
    `content` is a digest of what a change carries (the message a send hands out), so changing
    a recipient, the subject or the body after approval gives another target.
    """

    operation: str
    account: str
    source: str
    source_uidvalidity: int | None = None
    uids: tuple[int, ...] = field(default=())
    destination: str | None = None
    destination_uidvalidity: int | None = None
    source_uidnext: int | None = None
    source_messages: int | None = None
    content: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "uids", tuple(sorted(set(self.uids))))


def canonical_bytes(target: Target) -> bytes:
    """The one byte string every replica derives from `target`."""
    body = {"format": FORMAT, **asdict(target), "uids": list(target.uids)}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def fingerprint(target: Target) -> str:
    """SHA-256 of the canonical bytes, as hex."""
    return hashlib.sha256(canonical_bytes(target)).hexdigest()
