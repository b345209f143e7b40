"""From message ids to one mailbox's UIDs, checked against the server before anything acts.

Tools take `ids` (the opaque `imap.<mailbox>.<UIDVALIDITY>.<UID>` of `message_ids`); the
deprecated form is a `mailbox` plus `uids`, which trusts whatever UIDVALIDITY the mailbox has
now. `resolve` groups ids by mailbox; `select_checked` selects one group's mailbox and refuses
it as stale (`StaleMessageId`) when the mailbox was re-created or renumbered since the ids
were issued, so a UID is never applied to a message it did not name.
"""

from __future__ import annotations

import imaplib
from collections.abc import Sequence
from dataclasses import dataclass

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError

from .message_ids import InvalidMessageId, MessageRef, StaleMessageId, check_uidvalidity, decode_id, encode_id


class UnknownMailbox(ValueError):
    """The mailbox does not exist (or this account may not open it)."""


@dataclass(frozen=True)
class MessageSelection:
    """UIDs of one mailbox. `uidvalidity` is None only for the deprecated mailbox+uids form."""

    mailbox: str
    uidvalidity: int | None
    uids: tuple[int, ...]

    def ids(self, uidvalidity: int) -> list[str]:
        """The message ids of these UIDs under `uidvalidity`."""
        return [encode_id(MessageRef(self.mailbox, uidvalidity, uid)) for uid in self.uids]


def resolve(
    ids: Sequence[str] | None, mailbox: str | None = None, uids: Sequence[int] | None = None
) -> list[MessageSelection]:
    """Group `ids` by mailbox (first-seen order, UIDs sorted); or take the deprecated `mailbox`+`uids`."""
    if ids:
        if mailbox is not None or uids:
            raise InvalidMessageId("Give either ids or mailbox+uids, not both; prefer ids.")
        groups: dict[tuple[str, int], set[int]] = {}
        for raw in ids:
            ref = decode_id(raw)
            groups.setdefault((ref.mailbox, ref.uidvalidity), set()).add(ref.uid)
        return [MessageSelection(name, validity, tuple(sorted(found))) for (name, validity), found in groups.items()]
    if mailbox and uids:
        return [MessageSelection(mailbox, None, tuple(sorted(set(uids))))]
    raise InvalidMessageId("No messages given: pass ids as returned by search_messages or get_message.")


def select_checked(client: IMAPClient, selection: MessageSelection, readonly: bool = True) -> int:
    """Select the selection's mailbox and return its UIDVALIDITY; `StaleMessageId` if it changed."""
    try:
        info = client.select_folder(selection.mailbox, readonly=readonly)
    except (IMAPClientError, imaplib.IMAP4.error):
        raise UnknownMailbox(
            f"The mailbox {selection.mailbox!r} does not exist or cannot be opened; list_mailboxes shows the names."
        ) from None
    current = int(info[b"UIDVALIDITY"])
    if selection.uidvalidity is not None:
        check_uidvalidity(MessageRef(selection.mailbox, selection.uidvalidity, selection.uids[0]), current)
    return current


__all__ = ["MessageSelection", "StaleMessageId", "UnknownMailbox", "resolve", "select_checked"]
