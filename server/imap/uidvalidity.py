"""A UIDVALIDITY the IMAP server has committed to, also on servers that commit late.

Courier-IMAP writes a mailbox's UIDVALIDITY down only when the mailbox is first selected
read-write; until then every STATUS and EXAMINE answers with the current time, so an id taken
from such a mailbox (a folder a hosting panel made and no mail client has opened yet) would go
stale within a second, and an approval pinned to it would never match. `settle` makes such a
server commit before its UIDVALIDITY is read: a read-write SELECT, then EXAMINE and CLOSE, which
expunge nothing (selecting a mailbox again deselects without expunging, RFC 3501 6.3.1, and CLOSE
of a read-only mailbox expunges nothing). Nothing is selected afterwards: Courier refuses to
APPEND to or DELETE the selected mailbox. Other servers are left alone.
"""

from __future__ import annotations

from imapclient import IMAPClient

#: greeting text of the servers that fix UIDVALIDITY only at the first read-write SELECT
_LATE_COMMITTERS = (b"Courier-IMAP",)


def commits_late(client: IMAPClient) -> bool:
    """Whether this connection's server fixes a mailbox's UIDVALIDITY only when it is first selected read-write."""
    greeting = client.welcome or b""
    return any(name in greeting for name in _LATE_COMMITTERS)


def settle(client: IMAPClient, mailbox: str) -> None:
    """Make the server commit `mailbox`'s UIDVALIDITY (see the module docstring); nothing is selected if it did."""
    if commits_late(client):
        client.select_folder(mailbox)
        client.select_folder(mailbox, readonly=True)
        client.close_folder()
