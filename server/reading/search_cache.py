"""Keeping a mailbox's sorted search result exact while the mailbox changes, instead of sorting again.

Sorting 100,000 messages costs the server a tenth of a second or more, every time. What a search
matches, and in which order, changes only in ways one STATUS (UIDVALIDITY, UIDNEXT, MESSAGES,
HIGHESTMODSEQ; CONDSTORE, RFC 7162) tells apart, because a message's headers, body and
INTERNALDATE never change. That STATUS is the one the pool sends before every read
(`Examined.state`), right after the session's view was brought up to date:

- nothing moved: the remembered order is the answer (`hits`);
- messages arrived (UIDNEXT grew): only the UIDs from the old UIDNEXT up to the new one are
  searched and sorted (a few arrivals to an unfiltered search: by the dates their summaries give,
  which the page shows next), and put in front, when the oldest of them was received no earlier than the
  newest remembered match (else everything is sorted again: mail appended with an old date). Which
  of those UIDs exist is asked only when MESSAGES did not grow by as many as UIDNEXT;
- messages left (fewer messages than the old ones and the arrivals add up to): on a connection that
  has kept the mailbox examined, what the session was told left it (QRESYNC `VANISHED`, kept in a
  `mailbox_state.Journal`) when it can vouch for having heard all since the remembered state; else
  with QRESYNC the server names them (`VANISHED`, below); otherwise which remembered matches are
  still there is asked with `UID FETCH <set> (UID)` (`existence`). The others are dropped;
- flags changed (HIGHESTMODSEQ grew): a search about content alone is unaffected; one that looks at
  flags (unread_only, flagged_only) re-checks only the UIDs changed since (`SEARCH MODSEQ`, or the
  QRESYNC command below when it ran anyway): those that stopped matching are dropped; one that started
  matching means sorting everything again (its place in the order is not known).

With QRESYNC, one `UID FETCH 1:<old UIDNEXT - 1> (UID) (CHANGEDSINCE <old HIGHESTMODSEQ> VANISHED)`
answers both questions with only what changed, instead of a search whose answer is as long as the
remembered result (100,000 UIDs for an unfiltered search of a 100,000-message INBOX). Where flags do
not matter and at most 1,000 matches are remembered, it names those instead of the whole range: the
server then checks them, not every message.

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
from itertools import filterfalse
from typing import Protocol

from ..imap.mailbox_state import MailboxState
from ..imap.pool import Examined
from ..imap.uid_sets import compress


class Search(Protocol):
    """One search on the selected mailbox, as the cache needs to ask it (`search.LiveSearch`)."""

    @property
    def key(self) -> Hashable: ...

    @property
    def flag_dependent(self) -> bool: ...

    @property
    def matches_everything(self) -> bool:
        """Whether every message matches (then the arrivals are the matches among them)."""

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

    def vanished_since(self, modseq: int) -> set[int] | None:
        """The UIDs that left after `modseq` (maybe with some that left earlier) as the session was told
        them, without asking; None when it cannot vouch for having been told of all."""

    def vanished_and_changed(self, modseq: int, uid_set: str) -> tuple[set[int], set[int]] | None:
        """The UIDs of `uid_set` that left the mailbox after `modseq` and those whose flags changed after it;
        None when the server cannot say in one command (no QRESYNC)."""

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
        self.told = 0  #: departures learnt from what the session had been told, without asking the server

    def ordered(self, examined: Examined, search: Search) -> Sequence[int]:
        """`search`'s matches in the examined mailbox, newest first: remembered, brought up to date, or (when
        neither) searched anew."""
        state = examined.state
        if state is None:
            return search.everything()
        key = (examined.mailbox, search.key)
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
        new: Sequence[int] = ()
        if arrived_range and search.matches_everything:
            new = search.newest_first_among(arrived_range)
            arrived = set(new)
        elif state.messages == old.messages + state.uidnext - old.uidnext:
            # MESSAGES grew by as many as UIDNEXT: each new UID is a message there, and none left (an
            # arrival takes one new UID, so fewer arrivals or any departure would leave the count lower)
            arrived = set(range(old.uidnext, state.uidnext))
        else:
            arrived = search.existing_among(arrived_range) if arrived_range else set()
        some_left = bool(ordered) and state.messages - len(arrived) != old.messages
        gone = search.vanished_since(old.highestmodseq) if some_left else None
        if gone is not None:
            with self._lock:
                self.told += 1
        since = None
        if some_left and gone is None:
            since = search.vanished_and_changed(old.highestmodseq, _asked_about(ordered, old, search))
            gone = since[0] if since is not None else None
        if gone is not None:
            ordered = _without(ordered, gone)
        elif some_left:
            kept = search.existing_among(compress(ordered))
            ordered = array("I", filter(kept.__contains__, ordered))
        if search.flag_dependent and state.highestmodseq != old.highestmodseq and old.uidnext > 1:
            changed = since[1] if since is not None else search.changed_since(old.highestmodseq, f"1:{old.uidnext - 1}")
            if changed:
                now = search.matching_among(compress(changed))
                if now - set(ordered):  # a message started matching: its place needs a full sort
                    return None
                ordered = _without(ordered, changed - now)
        if arrived:
            new = new or search.newest_first_among(compress(arrived))
            if new and ordered and not search.not_older(new[-1], ordered[0]):
                return None
            ordered = array("I", new) + ordered
        with self._lock:
            self.updates += 1
        return ordered


#: up to how many remembered matches the QRESYNC question names one by one instead of as one range
_NAMED = 1000


def _asked_about(ordered: array[int], old: MailboxState, search: Search) -> str:
    """The UIDs to ask which left (and changed): the remembered matches when they are few and flags do not
    matter (the server then checks those, not every message), else every UID the old state could hold."""
    if len(ordered) <= _NAMED and not search.flag_dependent:
        return compress(ordered)
    return f"1:{old.uidnext - 1}"


#: up to how many UIDs `_without` looks up one by one instead of passing over every remembered one
_FEW = 16


def _without(ordered: array[int], gone: set[int]) -> array[int]:
    """A copy of `ordered` without the UIDs in `gone`.

    A few are found by a byte search of the array's memory (`array.index` compares Python objects:
    3 ms to reach the end of 100,000 UIDs, a byte search 0.05 ms); many by one pass in Python.
    """
    if len(gone) > _FEW:
        return array("I", filterfalse(gone.__contains__, ordered))
    kept = ordered[:]
    for uid in gone:
        if (position := _position(kept, uid)) is not None:
            del kept[position]
    return kept


def _position(ordered: array[int], uid: int) -> int | None:
    """Where `uid` is in `ordered`, or None (it is not remembered: it did not match)."""
    memory, needle, start = ordered.tobytes(), array(ordered.typecode, [uid]).tobytes(), 0
    while (found := memory.find(needle, start)) != -1:
        if found % ordered.itemsize == 0:
            return found // ordered.itemsize
        start = found + 1  # the bytes straddle two UIDs: look further
    return None
