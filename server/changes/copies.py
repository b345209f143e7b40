"""Copies already made: a replayed copy finds its messages in the destination and copies nothing more.

A copy leaves its source in place, so replaying an approved copy (the same dialog answer, or the
same confirm_token within its lifetime) would find every source UID still there and copy again.
No server-side record is kept; instead a copy skips each source message whose Message-ID the
destination already holds. A message without a Message-ID cannot be recognised and is copied
every time; so is one whose Message-ID is not printable ASCII (a quoted IMAP SEARCH string
without CHARSET cannot carry it, and RFC 5322 does not allow it).

The destination is searched with `UID SEARCH HEADER Message-ID "…"` in chunks of ORs, so no
command line grows long; HEADER matches substrings, so each hit's Message-ID is then compared
exactly.
"""

from __future__ import annotations

import imaplib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from email.policy import compat32

from ..imap.answers import server_text
from ..imap.fetch import fetch
from ..imap.pool import NoSuchMailbox, examine
from ..imap.session import Session

MESSAGE_ID_ITEM = "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"
#: at most this many Message-IDs, and about this many bytes of them, per SEARCH command
CHUNK_IDS = 50
CHUNK_BYTES = 4000


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


def message_ids_of(client: Session, uids: Iterable[int], present: set[int] | None = None) -> dict[int, str]:
    """The Message-ID of each of `uids` in the selected mailbox, for those that have a searchable one; every
    UID the server answered for (the messages that exist) is added to `present`, when given."""
    found: dict[int, str] = {}
    fetched = fetch(client, sorted(set(uids)), [MESSAGE_ID_ITEM])
    if present is not None:
        present.update(fetched)
    for uid, data in fetched.items():
        raw = next((v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS")), b"")
        message_id = parse_message_id(raw if isinstance(raw, bytes) else b"")
        if message_id:
            found[uid] = message_id
    return found


def parse_message_id(header_block: bytes) -> str | None:
    """The Message-ID in a fetched header block, unfolded; None when absent or not printable ASCII."""
    value = BytesHeaderParser(policy=compat32).parsebytes(header_block).get("Message-ID")
    text = " ".join(str(value).split()) if value is not None else ""
    return text if text and text.isascii() and text.isprintable() else None


@dataclass(frozen=True)
class Held:
    """A destination examined for a copy: its UIDVALIDITY, and the source UIDs it holds by Message-ID."""

    uidvalidity: int
    uids: set[int]


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
    return Held(int(response[b"UIDVALIDITY"]), {uid for uid, message_id in by_message_id.items() if message_id in held})


def held_message_ids(client: Session, wanted: set[str], above: int = 0) -> set[str]:
    """Which of the `wanted` Message-IDs the selected mailbox holds (at a UID above `above`), compared exactly."""
    hits: set[int] = set()
    for chunk in chunks(sorted(wanted)):
        hits.update(uid for uid in client.search(any_message_id(chunk)) if uid > above)
    if not hits:
        return set()
    return set(message_ids_of(client, hits).values()) & wanted


def chunks(message_ids: list[str]) -> Iterator[list[str]]:
    """The Message-IDs in groups of at most `CHUNK_IDS`, each about `CHUNK_BYTES` long at most."""
    group: list[str] = []
    size = 0
    for message_id in message_ids:
        if group and (len(group) == CHUNK_IDS or size + len(message_id) > CHUNK_BYTES):
            yield group
            group, size = [], 0
        group.append(message_id)
        size += len(message_id)
    if group:
        yield group


def any_message_id(message_ids: list[str]) -> bytes:
    """SEARCH criteria matching any of `message_ids`: `OR OR a b c` (prefix ORs), each a quoted string."""
    terms = [b"HEADER Message-ID " + _quoted(message_id) for message_id in message_ids]
    return b"OR " * (len(terms) - 1) + b" ".join(terms)


def _quoted(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'.encode("ascii")
