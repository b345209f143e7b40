"""Leaving the selected mailbox without expunging anything, on any server.

UNSELECT (RFC 3691) where the server offers it. Otherwise CLOSE, which expunges nothing only when
the mailbox was EXAMINEd (read-only), so a read-write selection is first turned into a read-only
one by EXAMINEing the same mailbox (selecting again deselects without expunging, RFC 3501 6.3.1).

CLOSE after EXAMINE is housekeeping: nothing depends on it but the next command. A NO to it (seen
from servers that cannot write back what they keep about a mailbox) is logged, and the mailbox is
left selected read-only: every operation selects what it needs itself, so it never fails a tool.

Renaming or deleting the selected mailbox is another matter: a server may answer `* BYE Selected
mailbox no longer exists` before its OK, and the change is done though the answer is lost. So before
RENAME and DELETE, `leave` makes sure that mailbox is not selected: `deselect`, and where a mailbox
stays selected (CLOSE refused), EXAMINE of another one (INBOX), which leaves it without expunging
anything (RFC 3501 6.4.2: SELECT and EXAMINE close the selected mailbox without an expunge).
"""

from __future__ import annotations

import imaplib
import weakref

from imapclient import IMAPClient

from ..logs import get_logger
from .answers import server_text

#: the mailbox each connection selected last (the name as its caller gave it): EXAMINEd again to leave it
_SELECTED: weakref.WeakKeyDictionary[IMAPClient, str] = weakref.WeakKeyDictionary()


def selected(client: IMAPClient) -> bool:
    """Whether a mailbox is selected (or examined) on `client`."""
    return bool(client._imap.state == "SELECTED")


def selected_read_write(client: IMAPClient) -> bool:
    """Whether a mailbox is selected read-write (not EXAMINEd) on `client`."""
    return selected(client) and not client._imap.is_readonly


def note_selected(client: IMAPClient, mailbox: str) -> None:
    """Remember that `mailbox` is selected on `client` (the connection's `select_folder` calls this)."""
    _SELECTED[client] = mailbox


def deselect(client: IMAPClient) -> bool:
    """Leave the selected mailbox without expunging anything; whether nothing is selected now.

    False when a mailbox stays selected: CLOSE after EXAMINE was refused (logged), or the server offers
    no UNSELECT and the name of a read-write selection is not known (it could not be left without a risk
    of expunging).
    """
    if not selected(client):
        return True
    if client.has_capability("UNSELECT"):
        client.unselect_folder()
        return True
    if not client._imap.is_readonly:
        mailbox = _SELECTED.get(client)
        if mailbox is None:
            return False
        client.select_folder(mailbox, readonly=True)
    return close_examined(client)


def opened_read_only(client: IMAPClient) -> None:
    """Record that the SELECT just answered READ-ONLY: imaplib raises `readonly` then, and at every later command
    until told the mailbox is read-only, so the connection is marked as holding it read-only (as the server does)."""
    client._imap.is_readonly = True


def leave(client: IMAPClient, mailbox: str) -> None:
    """Make sure `mailbox` is not selected on `client` before it is renamed or deleted (see the module)."""
    if deselect(client):
        return
    other = "INBOX" if mailbox.upper() != "INBOX" else None
    if other is None:
        return  # INBOX is never renamed or deleted here
    client.select_folder(other, readonly=True)
    note_selected(client, other)


def close_examined(client: IMAPClient) -> bool:
    """CLOSE the mailbox EXAMINEd on `client`; a NO is logged and the mailbox stays selected (False).

    imaplib counts a mailbox as left once CLOSE is sent, whatever the answer; after a NO the server still has
    it selected, so the connection is marked selected again (read-only, as it was): `leave` relies on it."""
    try:
        client.close_folder()
    except imaplib.IMAP4.abort:
        raise  # the connection dropped: the pool's business
    except imaplib.IMAP4.error as exc:
        get_logger().warning("imap: CLOSE after EXAMINE was refused (%s); the mailbox stays selected", server_text(exc))
        client._imap.state = "SELECTED"
        return False
    return True
