"""Finding messages by Message-ID: read a message's, and search a mailbox for many at once.

A mailbox is searched with `UID SEARCH HEADER Message-ID "…"` in chunks of ORs, so no command line
grows long; HEADER matches substrings, so each hit's Message-ID is then compared exactly. A
Message-ID that is not printable ASCII cannot be searched for (a quoted IMAP SEARCH string without
CHARSET cannot carry it, and RFC 5322 does not allow it), so it is read as none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from email.parser import BytesHeaderParser
from email.policy import compat32

from .fetch import fetch
from .session import Session

MESSAGE_ID_ITEM = "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"
#: at most this many Message-IDs, and about this many bytes of them, per SEARCH command
CHUNK_IDS = 50
CHUNK_BYTES = 4000


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


def held_message_ids(client: Session, wanted: set[str], above: int = 0) -> set[str]:
    """Which of the `wanted` Message-IDs the selected mailbox holds (at a UID above `above`), compared exactly."""
    hits: set[int] = set()
    for chunk in chunks(sorted(wanted)):
        hits.update(uid for uid in client.search(any_message_id(chunk)) if uid > above)
    if not hits:
        return set()
    return set(message_ids_of(client, hits).values()) & wanted


def uids_with_message_id(client: Session, message_id: str) -> list[int]:
    """The UIDs in the selected mailbox whose Message-ID is exactly `message_id`, lowest first."""
    hits = client.search(any_message_id([message_id]))
    return sorted(uid for uid, found in message_ids_of(client, hits).items() if found == message_id)


def chunks(message_ids: list[str], max_ids: int = CHUNK_IDS, max_bytes: int = CHUNK_BYTES) -> Iterator[list[str]]:
    """The Message-IDs in groups of at most `max_ids`, each about `max_bytes` long at most."""
    group: list[str] = []
    size = 0
    for message_id in message_ids:
        if group and (len(group) == max_ids or size + len(message_id) > max_bytes):
            yield group
            group, size = [], 0
        group.append(message_id)
        size += len(message_id)
    if group:
        yield group


def any_message_id(message_ids: list[str], fields: tuple[str, ...] = ("Message-ID",)) -> bytes:
    """SEARCH criteria matching any of `message_ids` in any of the header `fields`: `OR OR a b c` (prefix ORs),
    each a quoted string (HEADER matches substrings: `In-Reply-To`, `References` hold several ids)."""
    terms = [f"HEADER {field} ".encode() + _quoted(message_id) for message_id in message_ids for field in fields]
    return b"OR " * (len(terms) - 1) + b" ".join(terms)


def _quoted(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'.encode("ascii")
