"""Searching one mailbox on the IMAP server, newest first, with an exact total.

The server does the matching: one `UID SORT (REVERSE ARRIVAL)` where it offers SORT (RFC 5256),
which gives the order and the total at once. Without SORT the matching UIDs come from
`UID SEARCH` (as one compact set with ESEARCH, RFC 4731) and are ordered by their INTERNALDATE,
which is what ARRIVAL means, so both ways give the same pages. Among equal INTERNALDATEs the
higher UID (the later arrival) comes first on every server: servers order such ties differently
under SORT (Dovecot and Cyrus by ascending UID, Courier descending), so `summarised_page` reads
the dates of the runs of equal dates that reach into a page and puts them newest UID first. Only
the requested page is summarised (`summaries.py`: its fixed parts from a cache when they were
shown lately, its flags always from the server); without SORT the INTERNALDATE of every match is
fetched first, to order them. Every search value is sent as one IMAP string (`search_string`),
never as bare words the server could read as syntax.
"Newest" is INTERNALDATE (when the server received the message), the date `since`/`before` use.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from imapclient.imapclient import _literal
from imapclient.response_parser import parse_message_list
from pydantic import Field

from ..imap.existence import existing_uids
from ..imap.fetch import FetchData, esearch_all, fetch, raw_untagged
from ..imap.mailbox_state import vanished_and_changed
from ..imap.pool import Examined
from ..imap.session import Session
from ..imap.uid_sets import expand, size
from .fence import Fenced
from .search_cache import OrderCache
from .search_query import AttachmentMemory, refuse_unsupported, with_attachment_state
from .summaries import MessageSummary, SummaryCache, describe, seconds

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def search_string(value: str) -> bytes:
    """`value` as exactly one IMAP string, whatever characters it holds.

    imapclient quotes only values with a space, `"` or `\\`, so `(draft)` or `{5}` would reach the
    server bare and be read as IMAP syntax (a parenthesised list, a literal announcement). ASCII is
    sent as a quoted string (`\\` and `"` escaped); anything else, or a line break, which a quoted
    string cannot hold, as a literal (imapclient sends a `_literal` as `{n}` + the bytes).
    """
    data = value.encode("utf-8")
    if data.isascii() and not any(byte in data for byte in b"\r\n\x00"):
        return b'"' + data.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
    return cast(bytes, _literal(data))  # imapclient is untyped; `_literal` subclasses bytes


def imap_date(day: dt.date) -> bytes:
    """RFC 3501 `date` (`1-Oct-2026`), independent of the locale."""
    return f"{day.day}-{_MONTHS[day.month - 1]}-{day.year:04d}".encode("ascii")


@dataclass(frozen=True)
class SearchQuery:
    """What to look for; every given condition must hold (they are ANDed)."""

    sender: str | None = None
    recipient: str | None = None
    subject: str | None = None
    text: str | None = None
    since: dt.date | None = None
    before: dt.date | None = None
    unread_only: bool = False
    flagged_only: bool = False
    offset: int = 0
    limit: int = 20
    #: more search keys, sent as given (e.g. `UNKEYWORD $Keyword`): only ever this server's own atoms
    extra_keys: tuple[bytes, ...] = ()
    cc: str | None = None
    bcc: str | None = None
    to_or_cc: str | None = None
    #: sizes in bytes (RFC 822 size), both exclusive as IMAP's LARGER/SMALLER are
    larger_than: int | None = None
    smaller_than: int | None = None
    #: keywords already checked to be IMAP atoms (`permanent_flags.KEYWORD`)
    keyword: str | None = None
    not_keyword: str | None = None
    #: True: only messages with the flag; False: only those without; None: either
    answered: bool | None = None
    draft: bool | None = None
    #: not a search key: matches are filtered by their BODYSTRUCTURE (`search_query.with_attachment_state`)
    has_attachment: bool | None = None
    oldest_first: bool = False
    #: Gmail's own search syntax (X-GM-RAW), only where the server announces X-GM-EXT-1
    gmail_query: str | None = None

    def program(self) -> list[bytes]:
        """The IMAP search keys, each value one string; FROM/TO/SUBJECT/TEXT are substrings, dates INTERNALDATE."""
        keys: list[bytes] = []
        for key, value in (
            ("FROM", self.sender),
            ("TO", self.recipient),
            ("CC", self.cc),
            ("BCC", self.bcc),
            ("SUBJECT", self.subject),
            ("TEXT", self.text),
        ):
            if value:
                keys += [key.encode(), search_string(value)]
        if self.to_or_cc:
            keys += [b"OR", b"TO", search_string(self.to_or_cc), b"CC", search_string(self.to_or_cc)]
        if self.since:
            keys += [b"SINCE", imap_date(self.since)]
        if self.before:
            keys += [b"BEFORE", imap_date(self.before)]
        if self.unread_only:
            keys.append(b"UNSEEN")
        if self.flagged_only:
            keys.append(b"FLAGGED")
        keys += self._flag_and_size_keys()
        if self.gmail_query:
            keys += [b"X-GM-RAW", search_string(self.gmail_query)]
        keys += self.extra_keys
        return keys or [b"ALL"]

    def _flag_and_size_keys(self) -> list[bytes]:
        keys: list[bytes] = []
        if self.larger_than is not None:
            keys += [b"LARGER", str(self.larger_than).encode()]
        if self.smaller_than is not None:
            keys += [b"SMALLER", str(self.smaller_than).encode()]
        if self.keyword:
            keys += [b"KEYWORD", self.keyword.encode("ascii")]
        if self.not_keyword:  # not UNKEYWORD, which Mailutils (imap4d 3.15) answers by dropping the connection
            keys += [b"NOT", b"KEYWORD", self.not_keyword.encode("ascii")]
        for flag, state in ((b"ANSWERED", self.answered), (b"DRAFT", self.draft)):
            if state is not None:
                keys.append(flag if state else b"UN" + flag)
        return keys

    @property
    def charset(self) -> str | None:
        """UTF-8 only when a search text needs it: a few servers refuse any CHARSET at all."""
        texts = (
            self.sender,
            self.recipient,
            self.cc,
            self.bcc,
            self.to_or_cc,
            self.subject,
            self.text,
            self.gmail_query,
        )
        return "UTF-8" if any(t and not t.isascii() for t in texts) else None


class SearchPage(Fenced):
    mailbox: str = Field(description='The mailbox searched; "*" when several were (then see mailboxes).')
    mailboxes: list[str] = Field(
        default_factory=list,
        description="The mailboxes searched, when mailboxes was given (each summary names its own); else empty.",
    )
    total: int = Field(description="Exact number of messages matching the search.")
    offset: int
    messages: list[MessageSummary] = Field(description="This page, newest first (or oldest first, as asked).")


def _keys(query: SearchQuery, within: str | None) -> list[bytes]:
    """The query's keys, and `UID within` when the search is restricted to a UID set.

    A command never ends in a value that ends in `}`: Mailutils takes a last word such as `"{5}"`
    (quoted or sent as a literal) for a literal announcement and waits for bytes that never come. `ALL`
    after it changes nothing (the keys are ANDed).
    """
    keys = query.program() if within is None else [*query.program(), b"UID", within.encode("ascii")]
    return [*keys, b"ALL"] if keys[-1].rstrip(b'"').endswith(b"}") else keys


def _search_command(query: SearchQuery, within: str | None = None) -> list[bytes]:
    """CHARSET (only when a value needs it: a few servers refuse any CHARSET at all), then the keys."""
    keys = _keys(query, within)
    return [b"CHARSET", b"UTF-8", *keys] if query.charset else keys


def matching(client: Session, query: SearchQuery, within: str | None = None) -> str | list[int]:
    """The matching UIDs: one compressed set with ESEARCH (RFC 4731), else the plain SEARCH list."""
    if client.has_capability("ESEARCH"):
        return esearch_all(client, _search_command(query, within))
    return list(parse_message_list(raw_untagged(client, b"SEARCH", _search_command(query, within))))


def matching_uids(client: Session, query: SearchQuery, within: str | None = None) -> list[int]:
    """Every UID in the selected mailbox matching `query` (of `within`, a UID set, if given), in no promised
    order."""
    found = matching(client, query, within)
    if isinstance(found, str):
        return expand(found) if found else []
    return found


def _newest_first_by_date(client: Session, query: SearchQuery, within: str | None = None) -> list[int]:
    """Matching UIDs in REVERSE ARRIVAL order, for a server without SORT: SEARCH, then INTERNALDATE of each."""
    found = matching(client, query, within)
    if not found:
        return []
    dates = {uid: _timestamp(data) for uid, data in fetch(client, found, ["INTERNALDATE"]).items()}
    return by_arrival(expand(found) if isinstance(found, str) else found, dates)


def by_arrival(uids: Iterable[int], dates: Mapping[int, float]) -> list[int]:
    """`uids` newest first by their INTERNALDATE (`dates`, in seconds; unknown ones last), equal dates in
    descending UID order (the later arrival first): the one order every page of a search is shown in."""
    return sorted(uids, key=lambda uid: (-dates.get(uid, 0.0), -uid))


#: how many more dates `summarised_page` reads first, and at most at a time, while a run of equal dates goes on
#: past its window: most runs are short, and a date costs the server a file lookup on some stores (Maildir)
_FIRST_RUN_CHUNK, _MAX_RUN_CHUNK = 8, 128


def _timestamp(data: FetchData) -> float:
    return seconds(data.get(b"INTERNALDATE"))


def summarised_page(
    client: Session,
    examined: Examined,
    ordered: Sequence[int],
    offset: int,
    limit: int,
    cache: SummaryCache | None = None,
) -> list[MessageSummary]:
    """The summaries of `ordered[offset:offset + limit]`, with every run of equal INTERNALDATEs that
    reaches into it in descending UID order (the later arrival first).

    The page and its two neighbours are described at once (`summaries.describe`: from `cache`, or
    one fetch with their dates). Each run of equal dates is read whole (further dates are fetched
    while the run goes on past the neighbours), so a run split across two pages is ordered alike on
    both: paging stays gap-free.
    """
    stop = min(offset + limit, len(ordered))
    if offset >= stop:
        return []
    low, high = max(offset - 1, 0), min(stop + 1, len(ordered))
    described = describe(client, examined, ordered[low:high], cache)
    dates = {uid: fixed.seconds for uid, fixed in described.fixed.items()}

    def date_at(index: int) -> float:
        return dates.get(ordered[index], 0.0)

    def read_dates(more: Sequence[int]) -> int:
        known = cache.known(examined, more) if cache is not None else {}
        dates.update((uid, fixed.seconds) for uid, fixed in known.items())
        if unknown := [uid for uid in more if uid not in known]:
            dates.update((uid, _timestamp(data)) for uid, data in fetch(client, unknown, ["INTERNALDATE"]).items())
        return len(more)

    chunk = _FIRST_RUN_CHUNK
    while low > 0 and date_at(low) == date_at(offset):
        low -= read_dates(ordered[max(low - chunk, 0) : low])
        chunk = min(chunk * 2, _MAX_RUN_CHUNK)
    chunk = _FIRST_RUN_CHUNK
    while high < len(ordered) and date_at(high - 1) == date_at(stop - 1):
        high += read_dates(ordered[high : high + chunk])
        chunk = min(chunk * 2, _MAX_RUN_CHUNK)
    window = by_arrival(ordered[low:high], dates)
    return described.summaries(client, window[offset - low : stop - low], cache)


def newest_first(client: Session, query: SearchQuery, within: str | None = None) -> list[int]:
    """Every UID matching `query` (of `within`, a UID set, if given): INTERNALDATE descending; equal dates as
    the server's SORT leaves them (`summarised_page` settles them), or without SORT in descending UID order."""
    if client.has_capability("SORT"):
        found = raw_untagged(client, b"SORT", [b"(REVERSE ARRIVAL)", b"UTF-8", *_keys(query, within)], unpack=True)
        return [int(uid) for uid in (found or b"").split()]
    return _newest_first_by_date(client, query, within)


#: up to how many new UIDs an unfiltered search orders by their summaries instead of a SORT of their range
_FEW_ARRIVALS = 20

#: search keys whose result depends on flags, which change; every other key is about content that never does
#: (X-GM-RAW may ask about labels and read state: taken as changing)
_FLAG_KEYS = (
    b"UNSEEN",
    b"FLAGGED",
    b"ANSWERED",
    b"UNANSWERED",
    b"DRAFT",
    b"UNDRAFT",
    b"KEYWORD",
    b"UNKEYWORD",
    b"X-GM-RAW",
)


@dataclass(frozen=True)
class LiveSearch:
    """`query` on the selected mailbox, as the order cache asks it (`search_cache.Search`)."""

    client: Session
    query: SearchQuery
    examined: Examined
    #: where dates of messages summarised lately are known without asking
    summaries: SummaryCache | None = None

    @property
    def key(self) -> tuple[tuple[bytes, ...], str | None]:
        return tuple(self.query.program()), self.query.charset

    @property
    def flag_dependent(self) -> bool:
        return any(key in _FLAG_KEYS for key in self.query.program())

    @property
    def matches_everything(self) -> bool:
        return self.query.program() == [b"ALL"]

    def everything(self) -> list[int]:
        return newest_first(self.client, self.query)

    def newest_first_among(self, uid_set: str) -> list[int]:
        """`newest_first` of `uid_set`. For an unfiltered search of a few UIDs (new mail), one fetch of their
        summaries says which exist and their dates, instead of a SORT; the summaries are kept for the page,
        which usually shows them. Fetched even when cached: a cached summary does not say the message is
        still there (another search may have described it before it was expunged)."""
        if self.matches_everything and self.summaries is not None and size(uid_set) <= _FEW_ARRIVALS:
            fixed = describe(self.client, self.examined, expand(uid_set), None).fixed
            self.summaries.keep(self.examined, fixed)
            return by_arrival(fixed, {uid: part.seconds for uid, part in fixed.items()})
        return newest_first(self.client, self.query, uid_set)

    def matching_among(self, uid_set: str) -> set[int]:
        return set(matching_uids(self.client, self.query, uid_set))

    def existing_among(self, uid_set: str) -> set[int]:
        return existing_uids(self.client, expand(uid_set))

    def changed_since(self, modseq: int, uid_set: str) -> set[int]:
        """UIDs of `uid_set` whose flags changed after `modseq` (CONDSTORE `SEARCH MODSEQ`, RFC 7162)."""
        keys = [b"MODSEQ", str(modseq + 1).encode(), b"UID", uid_set.encode("ascii")]
        if self.client.has_capability("ESEARCH"):
            found = esearch_all(self.client, keys)
            return set(expand(found)) if found else set()
        return set(parse_message_list(raw_untagged(self.client, b"SEARCH", keys)))

    def vanished_since(self, modseq: int) -> set[int] | None:
        journal, state = self.examined.journal, self.examined.state
        return journal.vanished_since(modseq, state) if journal is not None and state is not None else None

    def vanished_and_changed(self, modseq: int, uid_set: str) -> tuple[set[int], set[int]] | None:
        return vanished_and_changed(self.client, modseq, uid_set, self.examined.journal)

    def not_older(self, newer: int, older: int) -> bool:
        """Whether message `newer` was received no earlier than message `older` (INTERNALDATE).

        Both are described as a page would describe them (`older` was usually on the last page shown, so
        its date is in `summaries`), and `newer` is then kept there for the page about to be shown.
        """
        fixed = describe(self.client, self.examined, [newer, older], self.summaries).fixed
        dates = {uid: part.seconds for uid, part in fixed.items()}
        return dates.get(newer, 0.0) >= dates.get(older, 0.0)


def search_page(
    client: Session,
    examined: Examined,
    query: SearchQuery,
    cache: OrderCache | None = None,
    summaries: SummaryCache | None = None,
    attachments: AttachmentMemory | None = None,
) -> SearchPage:
    """One page of `query`'s matches; `cache` may supply the order when the mailbox is unchanged, `summaries`
    the parts of the page's summaries that never change, `attachments` which messages have attachments."""
    ordered = newest_matches(client, examined, query, cache, summaries, attachments)
    return SearchPage(
        mailbox=examined.mailbox,
        total=len(ordered),
        offset=query.offset,
        messages=page_in_order(client, examined, ordered, query, summaries),
    )


def newest_matches(
    client: Session,
    examined: Examined,
    query: SearchQuery,
    cache: OrderCache | None = None,
    summaries: SummaryCache | None = None,
    attachments: AttachmentMemory | None = None,
) -> Sequence[int]:
    """Every match of `query` in the examined mailbox, newest first (whatever order the query asks pages in)."""
    refuse_unsupported(client, query.gmail_query)
    if cache is None:
        ordered: Sequence[int] = newest_first(client, query)
    else:
        ordered = cache.ordered(examined, LiveSearch(client, query, examined, summaries))
    if query.has_attachment is not None:
        ordered = with_attachment_state(
            client, examined, ordered, query.has_attachment, attachments or AttachmentMemory()
        )
    return ordered


def page_in_order(
    client: Session, examined: Examined, newest: Sequence[int], query: SearchQuery, summaries: SummaryCache | None
) -> list[MessageSummary]:
    """The page `query.offset`/`query.limit` of `newest` (the matches newest first) in the query's order.

    Oldest first is the exact reverse of newest first (INTERNALDATE, equal dates by UID), so its page is the
    mirror page of the newest-first order, reversed: paging stays gap-free the same way.
    """
    if not query.oldest_first:
        return summarised_page(client, examined, newest, query.offset, query.limit, summaries)
    stop = len(newest) - query.offset
    if stop <= 0:
        return []
    start = max(stop - query.limit, 0)
    return summarised_page(client, examined, newest, start, stop - start, summaries)[::-1]
