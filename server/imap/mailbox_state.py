"""What one STATUS says about a mailbox, that STATUS sent right behind the NOOP before a read, and
what changed in it since a state (QRESYNC, RFC 7162).

A mailbox's state is its UIDVALIDITY, UIDNEXT, MESSAGES and HIGHESTMODSEQ (CONDSTORE, RFC 7162):
two equal states mean the same messages with the same flags. The pool needs the UIDVALIDITY
before every read of a kept-selected mailbox, and the search-order cache needs the whole state,
so both come from one STATUS, sent after the NOOP that brings the session's view of the mailbox up
to date: two round trips instead of three. Dovecot answers a STATUS of the selected mailbox from the
session's view, so the state must be asked after the NOOP (and after a SELECT) has been answered, or
it describes the mailbox as the session saw it before.

Where the server offers QRESYNC, each connection enables it right after logging in (ENABLE is only
allowed before a mailbox is selected); then one `UID FETCH … (CHANGEDSINCE m VANISHED)` says which
messages left the mailbox and which changed flags since the state with HIGHESTMODSEQ m. Enabled,
it makes the server report expunges as VANISHED instead of EXPUNGE, which nothing here reads.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from imapclient import IMAPClient

from imap_mcp.server.imap.fetch_parser import parse_fetch_response
from imap_mcp.server.imap.uid_sets import expand

STATE_ITEMS = (b"UIDVALIDITY", b"UIDNEXT", b"MESSAGES", b"HIGHESTMODSEQ")
#: what a NOOP reports about the selected mailbox; nobody reads it (the STATUS says what counts), so it is
#: dropped instead of piling up in imaplib's response store on a connection kept for hours
_SYNC_RESPONSES = ("EXISTS", "RECENT", "EXPUNGE", "FETCH", "VANISHED")
#: connections on which QRESYNC is enabled
_QRESYNC: weakref.WeakSet[IMAPClient] = weakref.WeakSet()


@dataclass(frozen=True)
class MailboxState:
    uidvalidity: int
    uidnext: int
    messages: int
    highestmodseq: int


def _state(values: dict[bytes, int]) -> MailboxState | None:
    if not all(item in values for item in STATE_ITEMS):
        return None
    return MailboxState(*(values[item] for item in STATE_ITEMS))


def _items(client: IMAPClient) -> tuple[bytes, ...]:
    """The whole state where the server has CONDSTORE; else only UIDVALIDITY (flag changes go unseen)."""
    return STATE_ITEMS if client.has_capability("CONDSTORE") else (b"UIDVALIDITY",)


def mailbox_state(client: IMAPClient, mailbox: str) -> MailboxState | None:
    """The mailbox's state now, or None when the server cannot report flag changes (no CONDSTORE)."""
    if not client.has_capability("CONDSTORE"):
        return None
    return _state(_status(client, mailbox, STATE_ITEMS))


def _status(client: IMAPClient, mailbox: str, items: tuple[bytes, ...]) -> dict[bytes, int]:
    return {bytes(name).upper(): int(value) for name, value in client.folder_status(mailbox, list(items)).items()}


def noop_then_status(client: IMAPClient, mailbox: str) -> tuple[int | None, MailboxState | None]:
    """A NOOP on the session, then `mailbox`'s UIDVALIDITY and (with CONDSTORE) its state.

    Two round trips, one after the other: written together, Dovecot may answer the STATUS before the NOOP
    has brought the view up to date (it runs pipelined commands side by side), and then reports the
    mailbox as it was (tests/reading/test_search_cache.py caught it).
    """
    client.noop()
    for name in _SYNC_RESPONSES:
        client._imap.untagged_responses.pop(name, None)
    values = _status(client, mailbox, _items(client))
    return values.get(b"UIDVALIDITY"), _state(values)


def enable_qresync(client: IMAPClient) -> None:
    """ENABLE QRESYNC where the server offers it; call once, logged in, before any mailbox is selected."""
    if client.has_capability("QRESYNC") and b"QRESYNC" in client.enable("QRESYNC"):
        _QRESYNC.add(client)


def vanished_and_changed(client: IMAPClient, modseq: int, uid_set: str) -> tuple[set[int], set[int]] | None:
    """The UIDs of `uid_set` in the selected mailbox that left it since `modseq`, and those whose flags
    changed since; None when QRESYNC is not enabled on `client` (then ask by search instead).

    The vanished set may name UIDs that never existed or left earlier (RFC 7162 allows it); it never
    names a message the mailbox holds.
    """
    if client not in _QRESYNC:
        return None
    imap = client._imap
    imap.untagged_responses.pop("VANISHED", None)
    typ, data = imap.uid("FETCH", uid_set, "(UID)", f"(CHANGEDSINCE {modseq} VANISHED)")
    client._checkok("uid fetch", typ, data)
    vanished = {
        uid for line in imap.untagged_responses.pop("VANISHED", []) for uid in expand(line.split()[-1].decode("ascii"))
    }
    changed = {values[b"UID"] for values in parse_fetch_response([d for d in data if d]).values() if b"UID" in values}
    return vanished, changed
