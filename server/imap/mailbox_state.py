"""What one STATUS says about a mailbox, that STATUS sent right behind the NOOP before a read, and
what changed in it since a state (QRESYNC, RFC 7162).

A mailbox's state is its UIDVALIDITY, UIDNEXT, MESSAGES and HIGHESTMODSEQ (CONDSTORE, RFC 7162):
two equal states mean the same messages with the same flags. The pool needs the UIDVALIDITY, UIDNEXT
and MESSAGES before every read of a kept-selected mailbox (a server that tells a session nothing
another made shows it there), and the search-order cache needs the whole state,
so both come from one STATUS, sent after the NOOP that brings the session's view of the mailbox up
to date: two round trips instead of three. Dovecot answers a STATUS of the selected mailbox from the
session's view, so the state must be asked after the NOOP (and after a SELECT) has been answered, or
it describes the mailbox as the session saw it before.

Where the server offers QRESYNC, each connection enables it right after logging in (ENABLE is only
allowed before a mailbox is selected); then one `UID FETCH … (CHANGEDSINCE m VANISHED)` says which
messages left the mailbox and which changed flags since the state with HIGHESTMODSEQ m. Enabled,
it also makes the server report expunges to the session as VANISHED with their UIDs, and those are
kept (`Journal`): a session that has had the mailbox selected since HIGHESTMODSEQ w, and whose
last NOOP ended at the HIGHESTMODSEQ the STATUS then reported, has been told of every message that
left since w. Asking the server (a scan of every message's modseq: about 9 ms on 100,000 messages
in Dovecot) is then not needed. A server that does not say where its NOOP ended (the response code
`[HIGHESTMODSEQ n]` on the NOOP's OK is not required of it; Dovecot gives it when the NOOP brought
news, Cyrus not) is always asked. A SELECT or EXAMINE of the mailbox by anything else starts a new
view, of which the session is never told what left before: the journal then starts again.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import NamedTuple

from imapclient import IMAPClient

from .fetch_parser import parse_fetch_response
from .uid_sets import expand, size

STATE_ITEMS = (b"UIDVALIDITY", b"UIDNEXT", b"MESSAGES", b"HIGHESTMODSEQ")
#: what STATUS asks of a server without CONDSTORE: enough to see that messages came or left
_COUNT_ITEMS = (b"UIDVALIDITY", b"UIDNEXT", b"MESSAGES")
#: what a NOOP says when messages came or left the selected mailbox
_NEWS = ("EXISTS", "EXPUNGE", "VANISHED")
#: what a NOOP reports about the selected mailbox; nobody reads it (the STATUS says what counts), so it is
#: dropped instead of piling up in imaplib's response store on a connection kept for hours
_SYNC_RESPONSES = ("EXISTS", "RECENT", "EXPUNGE", "FETCH", "VANISHED")
#: connections on which QRESYNC is enabled
_QRESYNC: weakref.WeakSet[IMAPClient] = weakref.WeakSet()
#: where a NOOP's tagged OK says which HIGHESTMODSEQ the session's view reached
_SYNCED_AT = re.compile(rb"\[HIGHESTMODSEQ (\d+)\]")
#: most UIDs a journal keeps (and a VANISHED answer may name); beyond, the server is asked instead
MAX_TOLD = 100_000


#: a mailbox's UIDNEXT and message count, each None where unknown
Counts = tuple[int | None, int | None]


class AfterNoop(NamedTuple):
    """What `noop_then_status` found."""

    uidvalidity: int | None
    #: the whole state, where the server has CONDSTORE
    state: MailboxState | None
    #: the UIDNEXT and MESSAGES the STATUS reported
    counts: Counts
    #: whether the NOOP told the session of messages that came or left (EXISTS, EXPUNGE, VANISHED)
    told: bool


def counts_differ(seen: Counts, now: Counts) -> bool:
    """Whether two counts known on both sides differ (a count one side lacks proves nothing)."""
    return any(a is not None and b is not None and a != b for a, b in zip(seen, now, strict=True))


@dataclass(frozen=True)
class MailboxState:
    uidvalidity: int
    uidnext: int
    messages: int
    highestmodseq: int


@dataclass
class Journal:
    """What a session was told left its examined mailbox (VANISHED), kept while the mailbox stays selected.

    Each NOOP's news is one batch, with the HIGHESTMODSEQ the NOOP's view reached (None when the server
    did not say): a batch names messages that left after the previous NOOP's view and no later than its
    own. From `since` on (the state right after the EXAMINE), every message that left is in a batch.
    """

    since: int | None
    #: the connection's store of untagged responses when the mailbox was examined: imaplib makes a new one
    #: at every SELECT/EXAMINE, after which the session is never told what left before it
    responses: object = None
    batches: list[tuple[int | None, set[int]]] = field(default_factory=list)
    #: the HIGHESTMODSEQ at which the last NOOP left the session's view, when the STATUS after it agreed
    synced_at: int | None = None

    def vanished_since(self, modseq: int, state: MailboxState) -> set[int] | None:
        """The UIDs that left after `modseq` up to `state` (maybe with some that left earlier), or None when
        this journal cannot vouch for that."""
        if self.since is None or modseq < self.since or self.synced_at != state.highestmodseq:
            return None
        return set().union(*(uids for reached, uids in self.batches if reached is None or reached > modseq))

    def note(self, told: set[int] | None, reached: int | None = None) -> None:
        """Keep one batch; past MAX_TOLD UIDs in all, start again (vouching from the next NOOP on)."""
        if told is None or sum(len(uids) for _, uids in self.batches) + len(told) > MAX_TOLD:
            self.since, self.batches = None, []
        elif told:
            self.batches.append((reached, told))

    def selected_again(self, responses: object) -> None:
        """Forget everything when the mailbox was selected since (vouching again from the next NOOP on)."""
        if responses is not self.responses:
            self.since, self.batches, self.responses = None, [], responses

    def synced(self, reached: int | None, state: MailboxState | None) -> None:
        """After a NOOP whose view reached `reached`, and the STATUS after it."""
        self.synced_at = reached if state is not None and reached == state.highestmodseq else None
        if self.since is None:
            self.since = self.synced_at


def told_vanished(client: IMAPClient) -> set[int] | None:
    """The UIDs the server's VANISHED responses since they were last read name (taking them); None when
    they name more than MAX_TOLD."""
    lines = client._imap.untagged_responses.pop("VANISHED", [])
    sets = [bytes(line).split()[-1].decode("ascii") for line in lines]
    if sum(size(uid_set) for uid_set in sets) > MAX_TOLD:
        return None
    return {uid for uid_set in sets for uid in expand(uid_set)}


def _state(values: dict[bytes, int]) -> MailboxState | None:
    if not all(item in values for item in STATE_ITEMS):
        return None
    return MailboxState(*(values[item] for item in STATE_ITEMS))


def _items(client: IMAPClient) -> tuple[bytes, ...]:
    """The whole state where the server has CONDSTORE; else UIDVALIDITY and the counts (flag changes go unseen)."""
    return STATE_ITEMS if client.has_capability("CONDSTORE") else _COUNT_ITEMS


def mailbox_state(client: IMAPClient, mailbox: str) -> MailboxState | None:
    """The mailbox's state now, or None when the server cannot report flag changes (no CONDSTORE)."""
    if not client.has_capability("CONDSTORE"):
        return None
    return _state(_status(client, mailbox, STATE_ITEMS))


def _status(client: IMAPClient, mailbox: str, items: tuple[bytes, ...]) -> dict[bytes, int]:
    """The STATUS items that came as numbers: one given as NIL (`HIGHESTMODSEQ NIL` for an empty mailbox) or
    anything else is left out, so the state is unknown (as on a server without CONDSTORE) instead of an error."""
    answer = client.folder_status(mailbox, list(items)).items()
    return {bytes(name).upper(): value for name, value in answer if isinstance(value, int) and value >= 0}


def noop_then_status(client: IMAPClient, mailbox: str, journal: Journal | None = None) -> AfterNoop:
    """A NOOP on the session, then `mailbox`'s UIDVALIDITY, UIDNEXT and MESSAGES (with CONDSTORE, its whole
    state); what the session was told left the mailbox goes into `journal`.

    Two round trips, one after the other: written together, Dovecot may answer the STATUS before the NOOP
    has brought the view up to date (it runs pipelined commands side by side), and then reports the
    mailbox as it was (tests/reading/test_search_cache.py caught it).
    """
    responses = client._imap.untagged_responses
    if journal is not None:
        journal.selected_again(responses)
    heard = [len(responses.get(name, ())) for name in _NEWS]  # the EXAMINE's EXISTS is still there: not news
    answer, _ = client.noop()
    told_news = [len(responses.get(name, ())) for name in _NEWS] != heard
    told = told_vanished(client)
    for name in _SYNC_RESPONSES:
        responses.pop(name, None)
    values = _status(client, mailbox, _items(client))
    state = _state(values)
    if journal is not None:
        synced = _SYNCED_AT.search(answer) if isinstance(answer, bytes) else None
        reached = int(synced[1]) if synced else None
        journal.note(told, reached)
        journal.synced(reached, state)
    counts = (values.get(b"UIDNEXT"), values.get(b"MESSAGES"))
    return AfterNoop(values.get(b"UIDVALIDITY"), state, counts, told_news)


def journal_for(client: IMAPClient, state: MailboxState | None) -> Journal | None:
    """A journal for the mailbox just examined in `state`, where the session is told what leaves it."""
    if client not in _QRESYNC or state is None:
        return None
    return Journal(since=state.highestmodseq, responses=client._imap.untagged_responses)


def enable_qresync(client: IMAPClient) -> None:
    """ENABLE QRESYNC where the server offers it; call once, logged in, before any mailbox is selected."""
    if client.has_capability("QRESYNC") and b"QRESYNC" in client.enable("QRESYNC"):
        _QRESYNC.add(client)


def vanished_and_changed(
    client: IMAPClient, modseq: int, uid_set: str, journal: Journal | None = None
) -> tuple[set[int], set[int]] | None:
    """The UIDs of `uid_set` in the selected mailbox that left it since `modseq`, and those whose flags
    changed since; None when QRESYNC is not enabled on `client` (then ask by search instead).

    The vanished set may name UIDs that never existed or left earlier (RFC 7162 allows it); it never
    names a message the mailbox holds. None also when it names more than MAX_TOLD. What the session
    is told along the way goes into `journal`.
    """
    if client not in _QRESYNC:
        return None
    earlier = told_vanished(client)  # told before this command: left even earlier, or kept for a journal
    typ, data = client._imap.uid("FETCH", uid_set, "(UID)", f"(CHANGEDSINCE {modseq} VANISHED)")
    client._checkok("uid fetch", typ, data)
    vanished = told_vanished(client)
    if journal is not None:
        journal.note(earlier)
        journal.note(vanished)
    if vanished is None:
        return None  # more than anyone keeps: the caller asks by search instead
    changed = {values[b"UID"] for values in parse_fetch_response([d for d in data if d]).values() if b"UID" in values}
    return vanished, changed
