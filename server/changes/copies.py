"""Copies already made: a replayed copy finds its messages in the destination and copies nothing more (and a move
moves nothing the destination holds: `changes.messages`).

A copy leaves its source in place, so replaying an approved copy (the same dialog answer, or the
same confirm_token within its lifetime) would find every source UID still there and copy again.
A replay of one approval is the approval ledger's to stop (`changes.once`); a new approval of the
same copy skips each source message whose Message-ID the destination already holds
(`imap.by_message_id`). A message without a Message-ID cannot be recognised and is copied every
time.
"""

from __future__ import annotations

import imaplib
from collections.abc import Iterable
from dataclasses import dataclass

from ..imap.answers import server_text
from ..imap.by_message_id import held_message_ids, message_ids_of
from ..imap.pool import NoSuchMailbox, examine
from ..imap.session import Session


def already_copied(client: Session, uids: Iterable[int], destination: str, above: int = 0) -> set[int]:
    """Of `uids` in the selected mailbox, those whose Message-ID `destination` already holds (at a UID above `above`).

    Leaves `destination` selected (read-only): the caller selects the source again.
    """
    by_uid = message_ids_of(client, uids)
    if not by_uid:
        return set()
    examine(client, destination)
    held = held_message_ids(client, set(by_uid.values()), above)
    return {uid for uid, message_id in by_uid.items() if message_id in held}


@dataclass(frozen=True)
class Held:
    """A destination examined for a copy or a move: its UIDVALIDITY, its UIDNEXT (None where EXAMINE did not say),
    and the source UIDs it holds by Message-ID."""

    uidvalidity: int
    uids: set[int]
    uidnext: int | None = None


def held_in(client: Session, destination: str, by_message_id: dict[int, str]) -> Held:
    """EXAMINE `destination` and find which of the source messages (`by_message_id`) it holds already."""
    try:
        response = client.select_folder(destination, readonly=True)
    except imaplib.IMAP4.abort:
        raise
    except imaplib.IMAP4.error as exc:
        raise NoSuchMailbox(
            f"The mailbox {destination!r} does not exist or cannot hold messages ({server_text(exc)}); "
            "list_mailboxes shows the names (create it first with manage_mailbox if you meant a new one)."
        ) from None
    held = held_message_ids(client, set(by_message_id.values())) if by_message_id else set()
    uidnext = response.get(b"UIDNEXT")
    return Held(
        int(response[b"UIDVALIDITY"]),
        {uid for uid, message_id in by_message_id.items() if message_id in held},
        int(uidnext) if uidnext is not None else None,
    )
