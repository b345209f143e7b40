"""Opaque message ids: `imap.<mailbox, base64url>.<UIDVALIDITY>.<UID>`.

An id names one message for as long as its mailbox keeps the same UIDVALIDITY. When the
UIDVALIDITY changes, the same UID may name another message, so the id is *stale* and every
tool refuses it (`StaleMessageId`) instead of acting on whatever now has that UID.
UIDs here are always IMAP UIDs, never message sequence numbers.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from ..errors import MailboxError

PREFIX = "imap."
MAX_UID = 2**32 - 1


class InvalidMessageId(MailboxError, ValueError):
    """Not an id this server issued."""


class StaleMessageId(MailboxError, ValueError):
    """The mailbox was re-created or renumbered since the id was issued."""


@dataclass(frozen=True, order=True)
class MessageRef:
    mailbox: str
    uidvalidity: int
    uid: int

    @property
    def id(self) -> str:
        return encode_id(self)


def canonical_name(name: str) -> str:
    """`INBOX` for any spelling of it (RFC 3501: INBOX is case-insensitive), so ids, URIs and dialogs name it one
    way; other names unchanged."""
    return "INBOX" if name.upper() == "INBOX" else name


def encode_id(ref: MessageRef) -> str:
    name = base64.urlsafe_b64encode(ref.mailbox.encode()).decode().rstrip("=")
    return f"{PREFIX}{name}.{ref.uidvalidity}.{ref.uid}"


def _number(text: str, what: str, raw: str) -> int:
    # ASCII digits only: isdigit() also takes superscripts (int() refuses) and other scripts' digits (int() reads)
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_UID:
        raise InvalidMessageId(f"{raw!r} is not a message id: its {what} is not a number from 1 to {MAX_UID}.")
    return int(text)


def decode_id(raw: str) -> MessageRef:
    """The message an id names, or `InvalidMessageId` saying what is wrong with it.

    Every message has exactly one id: any other spelling of it is refused, never taken as an alias.
    """
    if not isinstance(raw, str) or not raw.startswith(PREFIX):
        raise InvalidMessageId(f"{raw!r} is not a message id: ids start with {PREFIX!r}; use one returned by a tool.")
    parts = raw[len(PREFIX) :].split(".")
    if len(parts) != 3:
        raise InvalidMessageId(f"{raw!r} is not a message id; pass the id exactly as a tool returned it.")
    encoded, uidvalidity, uid = parts
    try:
        mailbox = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidMessageId(f"{raw!r} is not a message id: its mailbox part is damaged.") from None
    if not mailbox:
        raise InvalidMessageId(f"{raw!r} is not a message id: it names no mailbox.")
    ref = MessageRef(mailbox, _number(uidvalidity, "UIDVALIDITY", raw), _number(uid, "UID", raw))
    if ref.id != raw:  # leading zeros, base64 padding or unused bits: another spelling of some id
        raise InvalidMessageId(f"{raw!r} is not a message id as a tool returns it; pass the id exactly as returned.")
    return ref


def check_uidvalidity(ref: MessageRef, current: int) -> None:
    """Refuse `ref` when its mailbox's UIDVALIDITY is now `current` instead of the one it was issued with."""
    if ref.uidvalidity != current:
        raise StaleMessageId(
            f"The message id {ref.id} is stale: mailbox {ref.mailbox!r} was re-created or renumbered since "
            "it was issued (UIDVALIDITY changed), so its UIDs may now name other messages. Search again "
            "and use the new ids."
        )
