"""Leaving the selected mailbox without expunging anything, on any server.

UNSELECT (RFC 3691) where the server offers it. Otherwise CLOSE, which expunges nothing only when
the mailbox was EXAMINEd (read-only), so a read-write selection is first turned into a read-only
one by EXAMINEing the same mailbox (selecting again deselects without expunging, RFC 3501 6.3.1).

CLOSE after EXAMINE is housekeeping: nothing depends on it but the next command. A NO to it (seen
from servers that cannot write back what they keep about a mailbox) is logged, and the mailbox is
left selected read-only: every operation selects what it needs itself, so it never fails a tool.
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


def close_examined(client: IMAPClient) -> bool:
    """CLOSE the mailbox EXAMINEd on `client`; a NO is logged and the mailbox stays selected (False)."""
    try:
        client.close_folder()
    except imaplib.IMAP4.abort:
        raise  # the connection dropped: the pool's business
    except imaplib.IMAP4.error as exc:
        get_logger().warning("imap: CLOSE after EXAMINE was refused (%s); the mailbox stays selected", server_text(exc))
        return False
    return True
