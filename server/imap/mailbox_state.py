"""What one STATUS says about a mailbox, that STATUS sent right behind the NOOP before a read, and
what changed in it since a state (QRESYNC, RFC 7162).

A mailbox's state is its UIDVALIDITY, UIDNEXT, MESSAGES and HIGHESTMODSEQ (CONDSTORE, RFC 7162):
two equal states mean the same messages with the same flags. The pool needs the UIDVALIDITY
before every read of a kept-selected mailbox, and the search-order cache needs the whole state,
so both come from one STATUS, written right behind the NOOP that brings the session's view of the
mailbox up to date: the two cost one round trip instead of three. Dovecot answers a STATUS of the
selected mailbox from the session's view, so the state must be asked after the NOOP (and after a
SELECT), or it describes the mailbox as the session saw it before.

Where the server offers QRESYNC, each connection enables it right after logging in (ENABLE is only
allowed before a mailbox is selected); then one `UID FETCH … (CHANGEDSINCE m VANISHED)` says which
messages left the mailbox and which changed flags since the state with HIGHESTMODSEQ m. Enabled,
it makes the server report expunges as VANISHED instead of EXPUNGE, which nothing here reads.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from imapclient import IMAPClient
from imapclient.response_parser import parse_response

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
    status = client.folder_status(mailbox, list(STATE_ITEMS))
    return _state({item: int(status[item]) for item in STATE_ITEMS if item in status})


def noop_then_status(client: IMAPClient, mailbox: str) -> tuple[int | None, MailboxState | None]:
    """A NOOP on the session, then `mailbox`'s UIDVALIDITY and (with CONDSTORE) its state; one round trip.

    Both commands are written before either answer is read (RFC 3501 §5.5 lets a client send commands
    without waiting); the server runs them in order, so the STATUS sees the view the NOOP brought up to
    date. A STATUS refused (the mailbox is gone) raises IMAPClientError once both are answered, so the
    connection stays in step.
    """
    imap = client._imap
    items = _items(client)
    noop_tag = imap._command("NOOP")
    status_tag = imap._command("STATUS", client._normalise_folder(mailbox), "(" + b" ".join(items).decode() + ")")
    try:
        noop_typ, noop_data = imap._command_complete("NOOP", noop_tag)
    finally:
        typ, data = imap._command_complete("STATUS", status_tag)
        typ, data = imap._untagged_response(typ, data, "STATUS")
        for name in _SYNC_RESPONSES:
            imap.untagged_responses.pop(name, None)
    client._checkok("noop", noop_typ, noop_data)
    client._checkok("status", typ, data)
    parsed = parse_response(data)[-1]
    values = {bytes(name).upper(): int(value) for name, value in zip(parsed[::2], parsed[1::2], strict=False)}
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
