"""What the server kept: flags read back after an APPEND or a STORE, never the request echoed.

A server may take a keyword in APPEND or STORE and keep nothing (PERMANENTFLAGS without `\\*`
and without the keyword), or ignore APPEND's flags altogether (GNU Mailutils). So what a tool
reports as set is what a FETCH FLAGS finds afterwards. What a mailbox says it keeps
(`said_kept`) is what `imap-mcp check` and get_server_info judge the tools by.
"""

from __future__ import annotations

import datetime as dt
import imaplib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .connection import append
from .fetch import fetch
from .permanent_flags import holds
from .selection import deselect, note_selected, opened_read_only
from .session import Session

#: a session flag the server sets by itself; never reported as kept or missing
RECENT = b"\\Recent"
_APPENDUID = re.compile(rb"\[APPENDUID (\d+) (\d+)\]")


@dataclass(frozen=True)
class Appended:
    """Where an APPEND put the message and the flags it has now; `uid` None when the server did not say
    and the message could not be found again (then `flags` is empty: nothing could be read back)."""

    mailbox: str
    uidvalidity: int
    uid: int | None
    flags: frozenset[bytes]

    def kept(self, flag: bytes) -> bool:
        """Whether the message has `flag` now (compared as IMAP compares flags: a server may answer it lowercased)."""
        return holds(self.flags, flag)


def read_flags(client: Session, uids: Iterable[int]) -> dict[int, frozenset[bytes]]:
    """The flags of `uids` in the selected mailbox, as the server answers now (unsolicited FETCHes ignored)."""
    wanted = sorted(set(uids))
    if not wanted:
        return {}
    fetched = fetch(client, wanted, ["FLAGS"]).items()
    return {uid: frozenset(data[b"FLAGS"]) - {RECENT} for uid, data in fetched if b"FLAGS" in data}


def append_and_read_back(
    client: Session,
    mailbox: str,
    message: bytes,
    flags: Sequence[bytes],
    when: dt.datetime | None = None,
    message_id: str | None = None,
) -> Appended:
    """APPEND `message` with `flags`, then read back what it has; flags the APPEND did not set are stored once
    more the ordinary way (some servers ignore APPEND's flags). Leaves `mailbox` selected read-write.

    The new message is found by APPENDUID (UIDPLUS), else by its `message_id` (the highest UID with it).
    """
    response = append(client, mailbox, message, tuple(flags), when)
    uidvalidity = int(client.select_folder(mailbox)[b"UIDVALIDITY"])
    uid = _appended_uid(client, response, uidvalidity, message_id)
    if uid is None:
        return Appended(mailbox, uidvalidity, None, frozenset())
    kept = read_flags(client, [uid]).get(uid, frozenset())
    missing = [flag for flag in flags if not holds(kept, flag)]
    if missing:
        client.add_flags([uid], missing, silent=True)
        kept = read_flags(client, [uid]).get(uid, frozenset())
    return Appended(mailbox, uidvalidity, uid, kept)


def _appended_uid(client: Session, response: object, uidvalidity: int, message_id: str | None) -> int | None:
    found = _APPENDUID.search(response if isinstance(response, bytes) else b"")
    if found is not None and int(found.group(1)) == uidvalidity:
        return int(found.group(2))
    if message_id is None:
        return None
    return max(client.search(["HEADER", "Message-ID", message_id]), default=None)


def said_kept(client: Session, mailbox: str) -> tuple[bool, frozenset[bytes] | None]:
    """Whether `mailbox` is read-only for this login, and the flags it says it keeps (PERMANENTFLAGS of a
    read-write SELECT; None when it does not say, which RFC 3501 reads as every flag). It is left at once,
    without expunging anything."""
    try:
        answer = client.select_folder(mailbox)
    except imaplib.IMAP4.readonly:  # answered READ-ONLY (imaplib raises it on a read-write SELECT)
        opened_read_only(client)
        deselect(client)
        return True, frozenset()
    note_selected(client, mailbox)
    try:
        permanent = answer.get(b"PERMANENTFLAGS")
        return b"READ-ONLY" in answer, None if permanent is None else frozenset(bytes(flag) for flag in permanent)
    finally:
        deselect(client)
