"""`get_thread`: the whole conversation a message belongs to, across the mailboxes that hold it.

Where it looks: the message's own mailbox, then the account's INBOX, Sent, Archive, All Mail and
Drafts (`ROLES`, found by `imap.mailboxes.mailbox_with_role`). Not Trash or Junk: what a person
threw away or what was filed as spam is not part of the conversation they keep (asked from a
message in Trash, Trash is its own mailbox and is searched). Not a "flagged" view either: it only
shows again messages that are in other mailboxes.

How (`thread_links` says what joins two messages; the subject never does):

- In the message's own mailbox, one `UID THREAD REFS` (Dovecot's and Cyrus's RFC 5256 variant,
  without subject grouping) or `UID THREAD REFERENCES` where offered gives the thread the message
  is in; each message of it is kept only when header links join it. The answer lists every message
  of the mailbox, so THREAD is used only while it should fit in a line imap-mcp reads (`_thread_fits`). A
  THREAD the server does not answer is replaced by searches (`_look_in_start_mailbox`).
- Everywhere else, and for ids learnt later (a reply in Sent names ids the own mailbox was not
  threaded for), `UID SEARCH` for `HEADER Message-ID`/`In-Reply-To`/`References` of the ids known
  so far, repeated until no mailbox has an id left to look for: a fixed point.

Both are bounded: `MAX_IDS` ids followed, `MAX_LINKED` messages whose headers are read,
`MAX_ROUNDS` rounds; where a bound stops the search the result says so (`complete: false`).
A message found in two mailboxes (the same Message-ID) is one entry with both locations. Entries
come oldest first by the date the server received them, each with the summary `search_messages`
gives (`summaries.describe`).

The start mailbox is read through the pool's kept-examined `InMailbox` reads; the other mailboxes
in one operation on another connection (`spare_kept`), so a large INBOX stays examined between calls.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from ..errors import MailboxError
from ..imap.by_message_id import CHUNK_BYTES, CHUNK_IDS, any_message_id, chunks
from ..imap.fetch import esearch_all, fetch, raw_untagged
from ..imap.helper_lookups import look_up
from ..imap.long_lines import MAX_LINE
from ..imap.mailboxes import Role, mailbox_with_role
from ..imap.message_ids import MessageRef, check_uidvalidity
from ..imap.pool import Examined, NoSuchMailbox, examine
from ..imap.session import Session
from ..imap.uid_sets import expand
from ..logs import get_logger
from .fence import Fenced
from .reader import MessageGone, SenderText
from .summaries import MessageSummary, SummaryCache, describe
from .thread_links import LINK_ITEM, Links, conversation, ids_of, links_of

#: the role mailboxes a conversation is looked for in, after the message's own (see the module's doc)
ROLES: tuple[Role, ...] = ("inbox", "sent", "archive", "all", "drafts")
#: what the lookup of those mailboxes is called when it fails (the thread is then looked for in its own mailbox)
ROLE_MAILBOXES = "The mailboxes besides its own to look in (INBOX, Sent, Archive, All Mail, Drafts)"
DEFAULT_MAX_MESSAGES = 50
MAX_MAX_MESSAGES = 200
#: the most distinct Message-IDs searched for in one call (each in every mailbox)
MAX_IDS = 300
#: the most messages whose link headers are read in one call (THREAD candidates and search hits)
MAX_LINKED = 1000
#: the most rounds of searching (a round: the start mailbox, then the others, each to its own fixed point)
MAX_ROUNDS = 6
#: the header fields an id is searched in, and so the ids per SEARCH command (three terms each)
SEARCHED_FIELDS = ("Message-ID", "In-Reply-To", "References")
_IDS_PER_SEARCH, _ID_BYTES_PER_SEARCH = CHUNK_IDS // 3, CHUNK_BYTES // 3
#: bytes a THREAD answer may need per message besides the UID's digits (a space, a pair of parentheses)
_THREAD_BYTES_PER_MESSAGE = 3

ThreadedWith = Literal["THREAD=REFS", "THREAD=REFERENCES", "SEARCH"]


class Location(BaseModel):
    id: str = Field(description="The message's id in this mailbox.")
    mailbox: str


class ThreadBody(SenderText):
    """A message's text in a thread, cut to its share of `max_chars`."""

    body_format: str = Field(description="'text/plain', 'text/html' (converted), or 'none' when there is no text.")
    truncated: bool = Field(description="True when this text was cut to its share of max_chars.")
    full_length: int = Field(description="Length of the whole text in characters (an estimate when it was cut).")


class ThreadMessage(MessageSummary):
    locations: list[Location] = Field(
        description="Every mailbox that holds this message (a copy counts once), the summary's first."
    )
    body: ThreadBody | None = Field(default=None, description="Its text, with include_bodies.")


class Thread(Fenced):
    id: str = Field(description="The message asked about.")
    total: int = Field(description="Messages found in the conversation (a message in two mailboxes counts once).")
    omitted: int = Field(description="How many of the oldest were left out to stay within max_messages.")
    complete: bool = Field(
        description="False when a safety bound stopped the search (bounded_by says which): there may be more."
    )
    bounded_by: list[str] = Field(description="The bounds that stopped the search, if any.")
    threaded_with: ThreadedWith = Field(
        description="How the message's own mailbox was threaded: the server's THREAD, or header searches."
    )
    mailboxes: list[str] = Field(description="The mailboxes looked in.")
    messages: list[ThreadMessage] = Field(description="The conversation, oldest first (by date received).")


@dataclass
class Memory:
    """What get_thread keeps between calls: the fixed parts of summaries, and the mailboxes (with their
    UIDVALIDITY) whose THREAD the server failed to answer, which are searched instead from then on."""

    summaries: SummaryCache = field(default_factory=SummaryCache)
    thread_failed: set[tuple[str, int]] = field(default_factory=set)


@dataclass
class Gathered:
    """What is known of a conversation so far; each step adds to it (a step run twice adds nothing twice)."""

    start: MessageRef
    links: dict[MessageRef, Links] = field(default_factory=dict)
    #: per mailbox, the ids searched for there (or covered by its THREAD answer)
    searched: dict[str, set[str]] = field(default_factory=dict)
    summaries: dict[MessageRef, MessageSummary] = field(default_factory=dict)
    #: the mailboxes to look in, the start's first; known after the first look
    mailboxes: list[str] = field(default_factory=list)
    threaded_with: ThreadedWith = "SEARCH"
    #: the start mailbox's THREAD: not asked, asked (and not answered yet), or answered
    thread: Literal["not asked", "asked", "answered"] = "not asked"
    bounded_by: set[str] = field(default_factory=set)

    _members: tuple[int, list[Links]] = field(default_factory=lambda: (0, []), init=False, repr=False)

    def members(self) -> list[Links]:
        """The conversation's messages among those read (recomputed only after more were read)."""
        if self._members[0] != len(self.links):
            found = conversation(self.links, self.start) if self.start in self.links else []
            self._members = (len(self.links), found)
        return self._members[1]

    def pending(self, mailbox: str) -> list[str]:
        """The ids of the conversation not yet searched for in `mailbox`; new ones only while `MAX_IDS` allows."""
        done = self.searched.setdefault(mailbox, set())
        wanted = sorted(ids_of(self.members()) - done)
        followed = set().union(*self.searched.values())
        room = MAX_IDS - len(followed)
        old = [i for i in wanted if i in followed]
        new = [i for i in wanted if i not in followed]
        if len(new) > room:
            self.bounded_by.add(f"at most {MAX_IDS} Message-IDs followed")
        return old + new[: max(room, 0)]

    def undescribed(self, mailbox: str) -> list[int]:
        return sorted(m.ref.uid for m in self.members() if m.ref.mailbox == mailbox and m.ref not in self.summaries)

    def needs(self, mailbox: str) -> bool:
        return bool(self.pending(mailbox) or self.undescribed(mailbox))


def read_links(client: Session, examined: Examined, uids: Iterable[int], gathered: Gathered) -> None:
    """Read the link headers of those of `uids` not read yet (at most `MAX_LINKED` in all: the closest to the
    start message by UID in its mailbox, the newest elsewhere)."""
    unread = [uid for uid in uids if MessageRef(examined.mailbox, examined.uidvalidity, uid) not in gathered.links]
    room = MAX_LINKED - len(gathered.links)
    if len(unread) > room:
        gathered.bounded_by.add(f"at most {MAX_LINKED} messages read")
        start = gathered.start.uid if examined.mailbox == gathered.start.mailbox else None
        unread = sorted(unread, key=lambda uid: abs(uid - start) if start is not None else -uid)[: max(room, 0)]
    if not unread:
        return
    for uid, data in fetch(client, unread, [LINK_ITEM]).items():
        block = next((v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS")), b"")
        ref = MessageRef(examined.mailbox, examined.uidvalidity, uid)
        gathered.links[ref] = links_of(ref, block if isinstance(block, bytes) else b"")


def _thread_algorithm(client: Session) -> Literal["REFS", "REFERENCES"] | None:
    if client.has_capability("THREAD=REFS"):
        return "REFS"
    return "REFERENCES" if client.has_capability("THREAD=REFERENCES") else None


def _thread_fits(client: Session, examined: Examined) -> bool:
    """Whether a THREAD answer for the whole mailbox should fit in one line imap-mcp reads (`MAX_LINE`): the UIDs'
    digits and, per message, a space and a pair of parentheses. One that does not (a mailbox near the limit with
    many branches) fails as a THREAD not answered: searched instead (`_look_in_start_mailbox`)."""
    if examined.state is not None:
        messages, uidnext = examined.state.messages, examined.state.uidnext
    else:
        status = client.folder_status(examined.mailbox, [b"MESSAGES", b"UIDNEXT"])
        counted, next_uid = status.get(b"MESSAGES"), status.get(b"UIDNEXT")
        if not isinstance(counted, int) or not isinstance(next_uid, int):
            return False
        messages, uidnext = counted, next_uid
    return messages * (len(str(uidnext)) + _THREAD_BYTES_PER_MESSAGE) < MAX_LINE - 1024


def thread_containing(answer: bytes, uid: int) -> list[int]:
    """The UIDs of the thread (a top-level parenthesised group of a THREAD answer) that holds `uid`; [] when none
    does. Reads only that group's parentheses: the answer for a large mailbox is hundreds of kilobytes."""
    found = re.search(rb"(?<![0-9])%d(?![0-9])" % uid, answer)
    bounds = _group_around(answer, found.start()) if found else None
    if bounds is None:
        return []
    return [int(number) for number in re.findall(rb"[0-9]+", answer[bounds[0] : bounds[1]])]


def _group_around(answer: bytes, position: int) -> tuple[int, int] | None:
    """(start, end) of the top-level parenthesised group around `position`; None when the answer is malformed."""
    depth = answer.count(b"(", 0, position) - answer.count(b")", 0, position)
    if depth <= 0:
        return None
    start = position
    while depth:
        start = max(answer.rfind(b"(", 0, start), answer.rfind(b")", 0, start))
        if start < 0:
            return None
        depth += -1 if answer[start] == ord("(") else 1
    end, depth = start + 1, 1
    while depth:
        opening, closing = answer.find(b"(", end), answer.find(b")", end)
        if closing < 0:
            return None
        if 0 <= opening < closing:
            depth, end = depth + 1, opening + 1
        else:
            depth, end = depth - 1, closing + 1
    return start, end


def thread_start_mailbox(client: Session, examined: Examined, gathered: Gathered, memory: Memory) -> None:
    """The start message's thread by the server's THREAD, where offered, its answer fits and it did not fail here
    before; its members' ids count as searched for in this mailbox: THREAD joined every message here that names
    one of them (RFC 5256 reads In-Reply-To only where there is no References, so a message whose References
    names none of them and whose In-Reply-To does is not found here: mail clients write both alike)."""
    algorithm = _thread_algorithm(client)
    if algorithm is None or (examined.mailbox, examined.uidvalidity) in memory.thread_failed:
        return
    if not _thread_fits(client, examined):
        return
    gathered.thread = "asked"
    answer = raw_untagged(client, b"THREAD", [algorithm.encode(), b"UTF-8", b"ALL"])
    gathered.thread = "answered"
    candidates = thread_containing(b" ".join(line for line in answer if isinstance(line, bytes)), gathered.start.uid)
    if not candidates:  # the server left the message out: searches do it
        return
    read_links(client, examined, candidates, gathered)
    gathered.searched.setdefault(examined.mailbox, set()).update(ids_of(gathered.members()))
    gathered.threaded_with = "THREAD=REFS" if algorithm == "REFS" else "THREAD=REFERENCES"


def _matching(client: Session, criteria: bytes) -> list[int]:
    """The UIDs in the selected mailbox matching `criteria`: one compact set with ESEARCH (RFC 4731)."""
    if client.has_capability("ESEARCH"):
        found = esearch_all(client, [criteria])
        return expand(found) if found else []
    return client.search(criteria)


def search_mailbox(client: Session, examined: Examined, gathered: Gathered) -> None:
    """Search the selected mailbox for the conversation's ids not searched for there yet, and read the headers
    of what matches (HEADER matches substrings: what the headers say decides, `thread_links.conversation`)."""
    wanted = gathered.pending(examined.mailbox)
    hits: set[int] = set()
    for chunk in chunks(wanted, _IDS_PER_SEARCH, _ID_BYTES_PER_SEARCH):
        hits.update(_matching(client, any_message_id(chunk, SEARCHED_FIELDS)))
    gathered.searched[examined.mailbox].update(wanted)
    read_links(client, examined, sorted(hits), gathered)


def describe_members(client: Session, examined: Examined, gathered: Gathered, cache: SummaryCache) -> None:
    """The summaries of the conversation's messages in the selected mailbox not summarised yet."""
    uids = gathered.undescribed(examined.mailbox)
    if not uids:
        return
    for summary in describe(client, examined, uids, cache).summaries(client, uids, cache):
        gathered.summaries[MessageRef(examined.mailbox, examined.uidvalidity, summary.uid)] = summary


def _to_fixed_point(client: Session, examined: Examined, gathered: Gathered) -> None:
    """Search the selected mailbox until it yields no id it was not searched for (at most `MAX_ROUNDS` times)."""
    for _ in range(MAX_ROUNDS):
        if not gathered.pending(examined.mailbox):
            return
        search_mailbox(client, examined, gathered)


def look_in_start_mailbox(client: Session, examined: Examined, gathered: Gathered, memory: Memory) -> None:
    """The start mailbox's part (an `InMailbox` read): the first time, the mailboxes to look in, the start message
    and its THREAD; then searches to a fixed point and the summaries of what belongs."""
    if not gathered.mailboxes:
        ref = gathered.start
        check_uidvalidity(ref, examined.uidvalidity)
        read_links(client, examined, [ref.uid], gathered)
        if ref not in gathered.links:
            raise MessageGone(
                f"No message with UID {ref.uid} in mailbox {ref.mailbox!r}: it was deleted or moved. Search again."
            )
        roles = look_up(lambda: [mailbox_with_role(client, role) for role in ROLES], ROLE_MAILBOXES)
        if roles.note:
            gathered.bounded_by.add(roles.note)
        gathered.mailboxes = list(dict.fromkeys([examined.mailbox, *(name for name in roles.value or () if name)]))
        thread_start_mailbox(client, examined, gathered, memory)
    _to_fixed_point(client, examined, gathered)
    describe_members(client, examined, gathered, memory.summaries)


def look_elsewhere(client: Session, gathered: Gathered, cache: SummaryCache) -> None:
    """The other mailboxes' part (one operation): each searched to its own fixed point, in turn, until none has an
    id left to look for; then the summaries of what belongs. A mailbox that cannot be opened is left out."""
    for _ in range(MAX_ROUNDS):
        waiting = [name for name in gathered.mailboxes[1:] if gathered.needs(name)]
        if not waiting:
            return
        for name in waiting:
            try:
                examined = examine(client, name)
            except NoSuchMailbox:
                gathered.mailboxes.remove(name)
                continue
            _to_fixed_point(client, examined, gathered)
            describe_members(client, examined, gathered, cache)


ReadStartMailbox = Callable[[Callable[[Session, Examined], None]], Awaitable[None]]
ReadElsewhere = Callable[[Callable[[Session], None]], Awaitable[None]]


async def gather(
    in_start_mailbox: ReadStartMailbox, elsewhere: ReadElsewhere, start: MessageRef, memory: Memory
) -> Gathered:
    """Look in the start message's mailbox, then in the others, in rounds until no mailbox has anything left to
    look for. `in_start_mailbox` runs a read of that mailbox (kept examined by the pool), `elsewhere` an operation
    that examines what it likes."""
    gathered = Gathered(start)
    for _ in range(MAX_ROUNDS):
        if not gathered.mailboxes or gathered.needs(gathered.mailboxes[0]):
            await _look_in_start_mailbox(in_start_mailbox, gathered, memory)
        if any(gathered.needs(name) for name in gathered.mailboxes[1:]):
            await elsewhere(lambda client: look_elsewhere(client, gathered, memory.summaries))
        if not any(gathered.needs(name) for name in gathered.mailboxes):
            return gathered
    gathered.bounded_by.add(f"at most {MAX_ROUNDS} rounds of searching")
    return gathered


async def _look_in_start_mailbox(in_start_mailbox: ReadStartMailbox, gathered: Gathered, memory: Memory) -> None:
    """`look_in_start_mailbox` in a read of the start mailbox; searching instead where its THREAD was asked and
    never answered (Dovecot's imap process dies of its memory limit threading a References of 10,000 ids, which
    anyone can send): the read is run again on a new connection (by the pool, or here), and skips THREAD since
    the mailboxes to look in are known. The mailbox is remembered, so later calls search at once."""
    try:
        await in_start_mailbox(lambda client, examined: look_in_start_mailbox(client, examined, gathered, memory))
    except MailboxError:
        if gathered.thread != "asked":
            raise
        _remember_thread_failed(gathered, memory)
        await in_start_mailbox(lambda client, examined: look_in_start_mailbox(client, examined, gathered, memory))
    if gathered.thread == "asked":  # asked, unanswered, and the pool's retry searched instead
        _remember_thread_failed(gathered, memory)


def _remember_thread_failed(gathered: Gathered, memory: Memory) -> None:
    gathered.thread = "not asked"
    memory.thread_failed.add((gathered.start.mailbox, gathered.start.uidvalidity))
    get_logger().warning(
        "get_thread: the IMAP server did not answer THREAD on mailbox %r; it is searched instead from now on",
        gathered.start.mailbox,
    )


def _seconds(summary: MessageSummary) -> float:
    return dt.datetime.fromisoformat(summary.date).timestamp() if summary.date else 0.0


def thread_of(gathered: Gathered, max_messages: int) -> Thread:
    """The tool's answer from what was gathered, oldest first.

    Copies (the same Message-ID) are one entry; its summary is of the start message, else of its copy in the
    mailbox looked in first; it is as old as its oldest copy. Beyond `max_messages` the oldest are left out,
    never the message asked about.
    """
    rank = {name: position for position, name in enumerate(gathered.mailboxes)}
    copies: dict[str, list[MessageRef]] = {}
    for member in gathered.members():
        if member.ref in gathered.summaries:  # one not summarised is gone (expunged meanwhile)
            copies.setdefault(member.own or member.ref.id, []).append(member.ref)
    entries: list[tuple[float, int, int, ThreadMessage]] = []
    for refs in copies.values():
        refs.sort(key=lambda ref: (ref != gathered.start, rank.get(ref.mailbox, len(rank)), ref.uid))
        first = gathered.summaries[refs[0]]
        locations = [Location(id=ref.id, mailbox=ref.mailbox) for ref in refs]
        entry = ThreadMessage.model_validate({**first.model_dump(), "locations": locations})
        entry._facts, entry._codes = first._facts, first._codes  # what `judged` judges by
        received = min(_seconds(gathered.summaries[ref]) for ref in refs)
        entries.append((received, rank.get(first.mailbox, len(rank)), first.uid, entry))
    ordered = [entry for *_, entry in sorted(entries, key=lambda item: item[:3])]
    kept = ordered
    if len(ordered) > max_messages:
        others = [entry.id for entry in ordered if entry.id != gathered.start.id]
        newest = set(others[len(others) - (max_messages - 1) :]) if max_messages > 1 else set()
        kept = [entry for entry in ordered if entry.id == gathered.start.id or entry.id in newest]
    return Thread(
        id=gathered.start.id,
        total=len(ordered),
        omitted=len(ordered) - len(kept),
        complete=not gathered.bounded_by,
        bounded_by=sorted(gathered.bounded_by),
        threaded_with=gathered.threaded_with,
        mailboxes=gathered.mailboxes,
        messages=kept,
    )
