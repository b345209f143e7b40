"""Searching one mailbox on the IMAP server, newest first, with an exact total.

The server does the matching: one `UID SORT (REVERSE ARRIVAL)` where it offers SORT (RFC 5256),
which gives the order and the total at once. Without SORT the matching UIDs come from
`UID SEARCH` (as one compact set with ESEARCH, RFC 4731) and are ordered by their INTERNALDATE,
which is what ARRIVAL means, so both ways give the same pages. Among equal INTERNALDATEs the
higher UID (the later arrival) comes first on every server: servers order such ties differently
under SORT (Dovecot and Cyrus by ascending UID, Courier descending), so `page_of` reads the dates
of the runs of equal dates that reach into a page and puts them newest UID first. Only the
requested page is fetched in full; without SORT the INTERNALDATE of every match is fetched first, to order them. Every
search value is sent as one IMAP string (`search_string`), never as bare words the server could
read as syntax.
"Newest" is INTERNALDATE (when the server received the message), the date `since`/`before` use.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from imapclient import IMAPClient
from imapclient.imapclient import _literal
from imapclient.response_parser import parse_message_list
from pydantic import BaseModel, Field

from imap_mcp.server.imap.fetch import UNREADABLE, FetchData, esearch_all, fetch, raw_untagged
from imap_mcp.server.imap.mailbox_state import vanished_and_changed
from imap_mcp.server.imap.message_ids import MessageRef
from imap_mcp.server.imap.pool import Examined
from imap_mcp.server.imap.uid_sets import expand
from imap_mcp.server.reading.parts import attachments, decode_words, parse_structure
from imap_mcp.server.reading.search_cache import OrderCache

SUMMARY_ITEMS = ("FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODYSTRUCTURE")
#: what is fetched again for a message whose summary could not be read: short whatever the message
BASIC_ITEMS = ("FLAGS", "INTERNALDATE", "RFC822.SIZE")
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

    def program(self) -> list[bytes]:
        """The IMAP search keys, each value one string; FROM/TO/SUBJECT/TEXT are substrings, dates INTERNALDATE."""
        keys: list[bytes] = []
        for key, value in (
            ("FROM", self.sender),
            ("TO", self.recipient),
            ("SUBJECT", self.subject),
            ("TEXT", self.text),
        ):
            if value:
                keys += [key.encode(), search_string(value)]
        if self.since:
            keys += [b"SINCE", imap_date(self.since)]
        if self.before:
            keys += [b"BEFORE", imap_date(self.before)]
        if self.unread_only:
            keys.append(b"UNSEEN")
        if self.flagged_only:
            keys.append(b"FLAGGED")
        keys += self.extra_keys
        return keys or [b"ALL"]

    @property
    def charset(self) -> str | None:
        """UTF-8 only when a search text needs it: a few servers refuse any CHARSET at all."""
        texts = (self.sender, self.recipient, self.subject, self.text)
        return "UTF-8" if any(t and not t.isascii() for t in texts) else None


class MessageSummary(BaseModel):
    id: str = Field(description="The message id: pass it to get_message, get_attachments and other tools.")
    uid: int = Field(description="The IMAP UID (deprecated way to name the message, with mailbox).")
    mailbox: str
    date: str | None = Field(description="When the server received it (IMAP INTERNALDATE), ISO 8601.")
    sender: str = Field(alias="from", description="The From header, decoded.")
    to: list[str] = Field(description="The To addresses, decoded.")
    subject: str = Field(description="The subject, decoded; written by the sender.")
    flags: list[str] = Field(description="IMAP flags and keywords, e.g. \\Seen, \\Flagged, $Forwarded.")
    unread: bool
    flagged: bool
    size: int = Field(description="Size of the whole message in bytes.")
    has_attachments: bool
    unreadable: str | None = Field(
        default=None,
        description=(
            "Set when the message could not be summarised (broken or hostile mail): why. Its id, flags, date and "
            "size are still given; sender, to and subject are then empty."
        ),
    )

    model_config = {"populate_by_name": True}


class SearchPage(BaseModel):
    mailbox: str
    total: int = Field(description="Exact number of messages matching the search.")
    offset: int
    messages: list[MessageSummary] = Field(description="This page, newest first.")


def _address(address: Any) -> str:
    name = decode_words(address.name) if address.name else ""
    mailbox = (address.mailbox or b"").decode("utf-8", "replace")
    host = (address.host or b"").decode("utf-8", "replace")
    email = f"{mailbox}@{host}" if host else mailbox
    return f"{name} <{email}>" if name else email


def _addresses(addresses: Sequence[Any] | None) -> list[str]:
    return [_address(a) for a in addresses or () if a.mailbox or a.host]


def _basics(examined: Examined, uid: int, data: dict[bytes, Any]) -> dict[str, Any]:
    """What a summary says that comes from neither headers nor structure: id, flags, date, size."""
    flags = [f.decode("utf-8", "replace") if isinstance(f, bytes) else str(f) for f in data.get(b"FLAGS", ())]
    lowered = {f.lower() for f in flags}
    received = data.get(b"INTERNALDATE")
    size = data.get(b"RFC822.SIZE")
    return {
        "id": MessageRef(examined.mailbox, examined.uidvalidity, uid).id,
        "uid": uid,
        "mailbox": examined.mailbox,
        "date": received.isoformat() if isinstance(received, dt.datetime) else None,
        "flags": flags,
        "unread": "\\seen" not in lowered,
        "flagged": "\\flagged" in lowered,
        "size": size if isinstance(size, int) else 0,
    }


def _summary(examined: Examined, uid: int, data: dict[bytes, Any]) -> MessageSummary:
    envelope = data.get(b"ENVELOPE")
    structure = data.get(b"BODYSTRUCTURE")
    return MessageSummary(
        **_basics(examined, uid, data),
        sender=", ".join(_addresses(envelope.from_)) if envelope else "",
        to=_addresses(envelope.to) if envelope else [],
        subject=decode_words(envelope.subject) if envelope else "",
        has_attachments=bool(structure and attachments(parse_structure(structure))),
    )


def _unreadable(examined: Examined, uid: int, data: dict[bytes, Any], reason: str) -> MessageSummary:
    return MessageSummary(
        **_basics(examined, uid, data), sender="", to=[], subject="", has_attachments=False, unreadable=reason
    )


def _summary_or_unreadable(examined: Examined, uid: int, data: dict[bytes, Any]) -> MessageSummary:
    """The summary of one message; one the parsers cannot read is listed as unreadable, never fails the page."""
    try:
        return _summary(examined, uid, data)
    except Exception:  # hostile mail may break any parser in a way nobody listed: it must not hide the page
        return _unreadable(examined, uid, data, "its headers or MIME structure could not be parsed")


def page_summaries(
    client: IMAPClient, examined: Examined, page: Sequence[int], fetched: dict[int, FetchData] | None = None
) -> list[MessageSummary]:
    """The summaries of `page`, in its order; a message whose summary cannot be fetched is listed as unreadable.

    `fetched` may already hold the summary items of some (from `page_of`); only the others are fetched. For
    unreadable ones, only FLAGS, INTERNALDATE and RFC822.SIZE are fetched again (their response is short).
    """
    found = {uid: fetched[uid] for uid in page if fetched and _summarised(fetched.get(uid, {}))}
    missing = [uid for uid in page if uid not in found]
    if missing:
        found.update(fetch(client, missing, SUMMARY_ITEMS))
    unreadable = [uid for uid in page if UNREADABLE in found.get(uid, {})]
    basics = fetch(client, unreadable, BASIC_ITEMS) if unreadable else {}
    summaries: list[MessageSummary] = []
    for uid in page:
        if uid in unreadable and uid in basics:
            summaries.append(_unreadable(examined, uid, basics[uid], found[uid][UNREADABLE]))
        elif uid in found and uid not in unreadable:
            summaries.append(_summary_or_unreadable(examined, uid, found[uid]))
    return summaries


def _summarised(data: FetchData) -> bool:
    """Whether `data` holds a message's summary items, or says why they could not be read."""
    return b"ENVELOPE" in data or UNREADABLE in data


def _keys(query: SearchQuery, within: str | None) -> list[bytes]:
    """The query's keys, and `UID within` when the search is restricted to a UID set."""
    return query.program() if within is None else [*query.program(), b"UID", within.encode("ascii")]


def _search_command(query: SearchQuery, within: str | None = None) -> list[bytes]:
    """CHARSET (only when a value needs it: a few servers refuse any CHARSET at all), then the keys."""
    keys = _keys(query, within)
    return [b"CHARSET", b"UTF-8", *keys] if query.charset else keys


def matching(client: IMAPClient, query: SearchQuery, within: str | None = None) -> str | list[int]:
    """The matching UIDs: one compressed set with ESEARCH (RFC 4731), else the plain SEARCH list."""
    if client.has_capability("ESEARCH"):
        return esearch_all(client, _search_command(query, within))
    return list(parse_message_list(raw_untagged(client, b"SEARCH", _search_command(query, within))))


def matching_uids(client: IMAPClient, query: SearchQuery, within: str | None = None) -> list[int]:
    """Every UID in the selected mailbox matching `query` (of `within`, a UID set, if given), in no promised
    order."""
    found = matching(client, query, within)
    if isinstance(found, str):
        return expand(found) if found else []
    return found


def _newest_first_by_date(client: IMAPClient, query: SearchQuery, within: str | None = None) -> list[int]:
    """Matching UIDs in REVERSE ARRIVAL order, for a server without SORT: SEARCH, then INTERNALDATE of each."""
    found = matching(client, query, within)
    if not found:
        return []
    dates = fetch(client, found, ["INTERNALDATE"])
    uids = expand(found) if isinstance(found, str) else found

    return sorted(uids, key=lambda uid: (-_timestamp(dates.get(uid, {})), -uid))


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: how many more dates `page_of` fetches at a time while a run of equal dates goes on past its window
_RUN_CHUNK = 100


def _timestamp(data: FetchData) -> float:
    received = data.get(b"INTERNALDATE")
    return (received if isinstance(received, dt.datetime) else _EPOCH).timestamp()


def page_of(
    client: IMAPClient, ordered: Sequence[int], offset: int, limit: int
) -> tuple[list[int], dict[int, FetchData]]:
    """`ordered[offset:offset + limit]`, with every run of equal INTERNALDATEs that reaches into it
    in descending UID order (the later arrival first); and the summary items of the page and its two
    neighbours, fetched with their dates in one command (for `page_summaries`).

    Each such run is read whole (the dates of the page, its neighbours, and further while the run
    goes on), so a run split across two pages is ordered alike on both: paging stays gap-free.
    """
    stop = min(offset + limit, len(ordered))
    if offset >= stop:
        return [], {}
    low, high = max(offset - 1, 0), min(stop + 1, len(ordered))
    fetched = fetch(client, ordered[low:high], SUMMARY_ITEMS)
    undated = [uid for uid in ordered[low:high] if b"INTERNALDATE" not in fetched.get(uid, {})]
    if undated:  # a message whose summary could not be read: its date alone is short
        for uid, data in fetch(client, undated, ["INTERNALDATE"]).items():
            fetched.setdefault(uid, {}).update(data)
    dates = {uid: _timestamp(data) for uid, data in fetched.items()}

    def date_at(index: int) -> float:
        return dates.get(ordered[index], 0.0)

    while low > 0 and date_at(low) == date_at(offset):
        more = ordered[max(low - _RUN_CHUNK, 0) : low]
        dates.update((uid, _timestamp(data)) for uid, data in fetch(client, more, ["INTERNALDATE"]).items())
        low -= len(more)
    while high < len(ordered) and date_at(high - 1) == date_at(stop - 1):
        more = ordered[high : high + _RUN_CHUNK]
        dates.update((uid, _timestamp(data)) for uid, data in fetch(client, more, ["INTERNALDATE"]).items())
        high += len(more)
    window = sorted(ordered[low:high], key=lambda uid: (-dates.get(uid, 0.0), -uid))
    return window[offset - low : stop - low], fetched


def newest_first(client: IMAPClient, query: SearchQuery, within: str | None = None) -> list[int]:
    """Every UID matching `query` (of `within`, a UID set, if given): INTERNALDATE descending; equal dates as
    the server's SORT leaves them (`page_of` settles them), or without SORT in descending UID order."""
    if client.has_capability("SORT"):
        found = raw_untagged(client, b"SORT", [b"(REVERSE ARRIVAL)", b"UTF-8", *_keys(query, within)], unpack=True)
        return [int(uid) for uid in (found or b"").split()]
    return _newest_first_by_date(client, query, within)


#: search keys whose result depends on flags, which change; every other key is about content that never does
_FLAG_KEYS = (b"UNSEEN", b"FLAGGED")


@dataclass(frozen=True)
class LiveSearch:
    """`query` on the selected mailbox, as the order cache asks it (`search_cache.Search`)."""

    client: IMAPClient
    query: SearchQuery

    @property
    def key(self) -> tuple[tuple[bytes, ...], str | None]:
        return tuple(self.query.program()), self.query.charset

    @property
    def flag_dependent(self) -> bool:
        return any(key in _FLAG_KEYS for key in self.query.program())

    def everything(self) -> list[int]:
        return newest_first(self.client, self.query)

    def newest_first_among(self, uid_set: str) -> list[int]:
        return newest_first(self.client, self.query, uid_set)

    def matching_among(self, uid_set: str) -> set[int]:
        return set(matching_uids(self.client, self.query, uid_set))

    def existing_among(self, uid_set: str) -> set[int]:
        return set(matching_uids(self.client, SearchQuery(), uid_set))

    def changed_since(self, modseq: int, uid_set: str) -> set[int]:
        """UIDs of `uid_set` whose flags changed after `modseq` (CONDSTORE `SEARCH MODSEQ`, RFC 7162)."""
        keys = [b"MODSEQ", str(modseq + 1).encode(), b"UID", uid_set.encode("ascii")]
        if self.client.has_capability("ESEARCH"):
            found = esearch_all(self.client, keys)
            return set(expand(found)) if found else set()
        return set(parse_message_list(raw_untagged(self.client, b"SEARCH", keys)))

    def vanished_and_changed(self, modseq: int, uid_set: str) -> tuple[set[int], set[int]] | None:
        return vanished_and_changed(self.client, modseq, uid_set)

    def not_older(self, newer: int, older: int) -> bool:
        """Whether message `newer` was received no earlier than message `older` (INTERNALDATE)."""
        dates = fetch(self.client, [newer, older], ["INTERNALDATE"])
        return _timestamp(dates.get(newer, {})) >= _timestamp(dates.get(older, {}))


def search_page(
    client: IMAPClient, examined: Examined, query: SearchQuery, cache: OrderCache | None = None
) -> SearchPage:
    """One page of `query`'s matches; `cache` may supply the order when the mailbox is unchanged."""
    if cache is None:
        ordered: Sequence[int] = newest_first(client, query)
    else:
        ordered = cache.ordered(examined, LiveSearch(client, query))
    page, fetched = page_of(client, ordered, query.offset, query.limit)
    return SearchPage(
        mailbox=examined.mailbox,
        total=len(ordered),
        offset=query.offset,
        messages=page_summaries(client, examined, page, fetched),
    )
