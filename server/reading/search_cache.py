"""Keeping a mailbox's sorted search result exact while the mailbox changes, instead of sorting again.

Sorting 100,000 messages costs the server a tenth of a second or more, every time. What a search
matches, and in which order, changes only in ways one STATUS (UIDVALIDITY, UIDNEXT, MESSAGES,
HIGHESTMODSEQ; CONDSTORE, RFC 7162) tells apart, because a message's headers, body and
INTERNALDATE never change:

- nothing moved: the remembered order is the answer (`hits`);
- messages arrived (UIDNEXT grew): only the UIDs from the old UIDNEXT up to the new one are
  searched and sorted, and put in front, when the oldest of them was received no earlier than the
  newest remembered match (else everything is sorted again: mail appended with an old date);
- messages left (fewer messages than the old ones and the arrivals add up to): the remembered
  matches still there are asked for in one `UID SEARCH UID <set>`, and the rest dropped;
- flags changed (HIGHESTMODSEQ grew): a search about content alone is unaffected; one that looks at
  flags (unread_only, flagged_only) re-checks only the UIDs changed since (`SEARCH MODSEQ`):
  those that stopped matching are dropped; one that started matching means sorting everything again.

Each step asks the server about the current state of exactly the UIDs it could affect, so the
result is the one a fresh search gives (a property test drives random interleavings against one).
On a server without CONDSTORE nothing is remembered. At most `max_entries` results are kept (four
bytes per UID; `memory_bytes` reports them).
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from imapclient import IMAPClient

from imap_mcp.server.imap.uid_sets import compress

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


class Search(Protocol):
    """One search on the selected mailbox, as the cache needs to ask it (`search.LiveSearch`)."""

    @property
    def key(self) -> Hashable: ...

    @property
    def flag_dependent(self) -> bool: ...

    def everything(self) -> Sequence[int]:
        """Every match, newest first."""

    def newest_first_among(self, uid_set: str) -> Sequence[int]:
        """The matches within `uid_set`, newest first."""

    def matching_among(self, uid_set: str) -> set[int]:
        """The matches within `uid_set`."""

    def existing_among(self, uid_set: str) -> set[int]:
        """The UIDs of `uid_set` the mailbox holds."""

    def changed_since(self, modseq: int, uid_set: str) -> set[int]:
        """The UIDs of `uid_set` whose flags changed after `modseq`."""

    def not_older(self, newer: int, older: int) -> bool:
        """Whether message `newer` was received no earlier than `older`."""


@dataclass(frozen=True)
class _Entry:
    state: MailboxState
    ordered: array[int]


class OrderCache:
    """A few recent sorted UID lists, keyed by mailbox and search, each with the state it is exact for."""

    def __init__(self, max_entries: int = 8) -> None:
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._max_entries = max_entries
        self.hits = 0  #: results reused unchanged (for tests and benchmarks)
        self.updates = 0  #: results brought up to date without sorting everything again
        self.full = 0  #: results sorted from scratch

    def ordered(self, client: IMAPClient, mailbox: str, search: Search) -> Sequence[int]:
        """`search`'s matches, newest first: remembered, brought up to date, or (when neither) searched anew."""
        state = mailbox_state(client, mailbox)
        if state is None:
            return search.everything()
        key = (mailbox, search.key)
        with self._lock:
            entry = self._entries.get(key)
        result = self._brought_up_to_date(entry, state, search) if entry is not None else None
        if result is None:
            result = array("I", search.everything())
            with self._lock:
                self.full += 1
        with self._lock:
            self._entries[key] = _Entry(state, result)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return result

    def memory_bytes(self) -> int:
        """The bytes the remembered UID lists take."""
        with self._lock:
            return sum(entry.ordered.itemsize * len(entry.ordered) for entry in self._entries.values())

    def _brought_up_to_date(self, entry: _Entry, state: MailboxState, search: Search) -> array[int] | None:
        """`entry`'s order as it is in `state`, asking only about what changed; None when only a full search
        can say."""
        old = entry.state
        if old == state:
            with self._lock:
                self.hits += 1
            return entry.ordered
        if old.uidvalidity != state.uidvalidity or state.uidnext < old.uidnext:
            return None
        ordered = entry.ordered
        arrived_range = f"{old.uidnext}:{state.uidnext - 1}" if state.uidnext > old.uidnext else None
        arrived = search.existing_among(arrived_range) if arrived_range else set()
        if ordered and state.messages - len(arrived) != old.messages:  # some of the old messages left
            kept = search.existing_among(compress(ordered))
            ordered = array("I", (uid for uid in ordered if uid in kept))
        if search.flag_dependent and state.highestmodseq != old.highestmodseq and old.uidnext > 1:
            changed = search.changed_since(old.highestmodseq, f"1:{old.uidnext - 1}")
            if changed:
                now = search.matching_among(compress(changed))
                if now - set(ordered):  # a message started matching: its place needs a full sort
                    return None
                ordered = array("I", (uid for uid in ordered if uid not in changed or uid in now))
        if arrived:
            new = search.newest_first_among(compress(arrived))
            if new and ordered and not search.not_older(new[-1], ordered[0]):
                return None
            ordered = array("I", new) + ordered
        with self._lock:
            self.updates += 1
        return ordered
