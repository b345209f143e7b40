"""Remembering a mailbox's sorted search result while the mailbox provably has not changed.

Sorting 100,000 messages costs the server a tenth of a second or more, every time. The order
of a search can only change if the mailbox changes: a message arrives (UIDNEXT grows), leaves
(MESSAGES shrinks, or UIDNEXT grows as well) or has its flags changed (HIGHESTMODSEQ grows, on
a server with CONDSTORE, RFC 7162). Headers, bodies and INTERNALDATE never change. So a result
is reused only when one STATUS reports the very same UIDVALIDITY, UIDNEXT, MESSAGES and
HIGHESTMODSEQ as when it was computed; on a server without CONDSTORE nothing is cached.
The cache never decides a result, it only skips recomputing an identical one.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from imapclient import IMAPClient

STATE_ITEMS = (b"UIDVALIDITY", b"UIDNEXT", b"MESSAGES", b"HIGHESTMODSEQ")


@dataclass(frozen=True)
class MailboxState:
    uidvalidity: int
    uidnext: int
    messages: int
    highestmodseq: int


def mailbox_state(client: IMAPClient, mailbox: str) -> MailboxState | None:
    """The mailbox's state now, or None when the server cannot report flag changes (no CONDSTORE)."""
    if not client.has_capability("CONDSTORE"):
        return None
    status = client.folder_status(mailbox, list(STATE_ITEMS))
    if not all(item in status for item in STATE_ITEMS):
        return None
    return MailboxState(*(int(status[item]) for item in STATE_ITEMS))


class OrderCache:
    """A few recent sorted UID lists, keyed by mailbox, its exact state, and the search."""

    def __init__(self, max_entries: int = 8) -> None:
        self._entries: OrderedDict[Hashable, array[int]] = OrderedDict()
        self._lock = threading.Lock()
        self._max_entries = max_entries
        self.hits = 0  #: results reused (for tests and benchmarks)

    def ordered(
        self, client: IMAPClient, mailbox: str, search: Hashable, compute: Callable[[], Sequence[int]]
    ) -> Sequence[int]:
        """`compute()`'s UIDs, or the same list remembered from a call on the unchanged mailbox."""
        state = mailbox_state(client, mailbox)
        if state is None:
            return compute()
        key = (mailbox, state, search)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
        result = array("I", compute())
        with self._lock:
            self._entries[key] = result
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return result
