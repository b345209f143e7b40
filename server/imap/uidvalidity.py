"""A UIDVALIDITY the IMAP server has committed to, also on servers that commit late.

Some servers fix a mailbox's UIDVALIDITY only once the mailbox is selected read-write. Courier-IMAP
answers every STATUS and EXAMINE of a mailbox never opened so with the current time; GNU Mailutils
gives a mailbox holding mail no one has opened read-write (Maildir `new/`) a new UIDVALIDITY, and
those messages new UIDs, at each look. An id taken from such an answer goes stale within a second,
and an approval pinned to it never matches. `settle` makes the server commit before the
UIDVALIDITY is read: a read-write SELECT, then leaving the mailbox without expunging anything
(`selection.deselect`: UNSELECT where offered, else EXAMINE and CLOSE). Nothing is selected
afterwards (Courier refuses to APPEND to or DELETE the selected mailbox).

Which servers need it is learnt from what they do, never from their greeting. Every UIDVALIDITY a
connection is told (SELECT, EXAMINE, STATUS) is noted per mailbox (`saw`), and a mailbox whose
UIDVALIDITY is seen to change between two answers is settled before its UIDVALIDITY is read again.
Two looks within one second may agree on a late committer (Courier reads the clock), so on a server
without CONDSTORE each mailbox is also settled the first time a connection reads its UIDVALIDITY;
a server with CONDSTORE keeps mod-sequences per mailbox across sessions (RFC 7162), and with them
the UIDVALIDITY they belong to, and is spared that first settle.
"""

from __future__ import annotations

import imaplib
import weakref
from typing import Any

from .answers import unexpected_answer
from .selection import deselect
from .session import Session


class _Seen:
    """What a connection was last told a mailbox's UIDVALIDITY is, whether it settled the mailbox, and whether
    the UIDVALIDITY changed since."""

    __slots__ = ("last", "settled", "unsteady")

    def __init__(self, last: int, settled: bool = False) -> None:
        self.last = last
        self.settled = settled
        self.unsteady = False


#: per connection, per mailbox (INBOX in upper case): the UIDVALIDITY seen last
_SIGHTINGS: weakref.WeakKeyDictionary[Session, dict[str, _Seen]] = weakref.WeakKeyDictionary()


def _key(mailbox: str) -> str:
    return "INBOX" if mailbox.upper() == "INBOX" else mailbox


def saw(client: Session, mailbox: str, uidvalidity: object) -> None:
    """Note a UIDVALIDITY the server gave for `mailbox` (anything else than a number is ignored)."""
    if not isinstance(uidvalidity, int) or isinstance(uidvalidity, bool):
        return
    sightings = _SIGHTINGS.setdefault(client, {})
    seen = sightings.get(_key(mailbox))
    if seen is None:
        sightings[_key(mailbox)] = _Seen(uidvalidity)
    elif seen.last != uidvalidity:
        seen.last, seen.unsteady = uidvalidity, True


def _needs_settling(client: Session, mailbox: str) -> bool:
    seen = _SIGHTINGS.get(client, {}).get(_key(mailbox))
    if seen is not None and seen.unsteady:
        return True
    return not (seen is not None and seen.settled) and not client.has_capability("CONDSTORE")


def settle(client: Session, mailbox: str) -> None:
    """Make the server commit `mailbox`'s UIDVALIDITY where it may not have (see the module docstring);
    nothing is selected afterwards if it did."""
    if not _needs_settling(client, mailbox):
        return
    try:
        answer = client.select_folder(mailbox)
    except imaplib.IMAP4.abort:
        raise  # the connection dropped: the pool's business
    except imaplib.IMAP4.error:
        return  # it cannot be opened read-write: nothing commits it; what the caller sends next says more
    committed = uidvalidity_in(answer, "SELECT")
    deselect(client)
    _SIGHTINGS.setdefault(client, {})[_key(mailbox)] = _Seen(committed, settled=True)


def uidvalidity_in(answer: dict[bytes, Any], command: str) -> int:
    """The UIDVALIDITY in a SELECT, EXAMINE or STATUS answer; `UnexpectedAnswer` when it has none."""
    value = answer.get(b"UIDVALIDITY")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if b"UIDVALIDITY" in answer:
        described = f"UIDVALIDITY {value!r}"
    else:
        described = "no UIDVALIDITY among " + " ".join(bytes(key).decode("ascii", "replace") for key in answer)
    raise unexpected_answer(command, described, ", so no message id can be made for its messages")
