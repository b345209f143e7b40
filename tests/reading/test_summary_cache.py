"""The summary cache keeps only what never changes about a message; flags always come from the server."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from harness import Account, append_message, plain_mail
from imapclient import IMAPClient

from imap_mcp.server.imap.pool import Examined, examine
from imap_mcp.server.imap.uid_sets import expand
from imap_mcp.server.reading.search import SearchPage, SearchQuery, search_page
from imap_mcp.server.reading.search_cache import OrderCache
from imap_mcp.server.reading.summaries import Fixed, SummaryCache


@pytest.fixture
def sent(client: IMAPClient) -> Iterator[list[bytes]]:
    """Every command line `client` sends from now on (the real server still answers them)."""
    lines: list[bytes] = []
    imap = client._imap
    original = imap.send

    def recording(data: bytes) -> None:
        lines.append(bytes(data))
        original(data)

    imap.send = recording
    yield lines
    imap.send = original


def fetched_items(lines: list[bytes]) -> list[bytes]:
    """What each FETCH sent asked for: the part after the UID set."""
    return [line.split(b" FETCH ", 1)[1].split(b" ", 1)[1].strip() for line in lines if b" FETCH " in line]


def ordering(client: IMAPClient) -> list[bytes]:
    """What a search fetches before its page on a server without SORT (Mailutils): every match's INTERNALDATE,
    to order them (`search.py`)."""
    return [] if client.has_capability("SORT") else [b"(INTERNALDATE)"]


def without_recent(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`listed` without `\\Recent`, which a session sees only until it opens the mailbox again."""
    return [{**summary, "flags": [f for f in summary["flags"] if f != "\\Recent"]} for summary in listed]


def summaries(client: IMAPClient, cache: SummaryCache, **query: Any) -> list[dict[str, Any]]:
    return [message.model_dump() for message in inbox_page(client, cache=cache, **query).messages]


@pytest.mark.matrix
def test_a_page_shown_again_is_asked_only_for_its_flags(client: IMAPClient, sent: list[bytes]) -> None:
    cache = SummaryCache()
    first = summaries(client, cache, limit=5)
    assert any(b"ENVELOPE" in items for items in fetched_items(sent))
    sent.clear()
    again = summaries(client, cache, limit=5)
    assert again == first
    assert fetched_items(sent) == [*ordering(client), b"(FLAGS)"]


@pytest.mark.matrix
def test_flags_set_by_another_client_show_on_a_page_shown_again(
    account: Account, client: IMAPClient, sent: list[bytes]
) -> None:
    cache = SummaryCache()
    first = summaries(client, cache, limit=3)
    newest = first[0]
    assert not newest["flagged"]
    other = account.imap()
    try:
        other.select_folder("INBOX")
        other.add_flags([newest["uid"]], [b"\\Flagged", b"\\Seen"])
    finally:
        other.logout()
    sent.clear()
    again = summaries(client, cache, limit=3)
    assert fetched_items(sent) == [*ordering(client), b"(FLAGS)"]
    assert again[0]["flagged"] and not again[0]["unread"] and "\\Flagged" in again[0]["flags"]
    assert without_recent(again[1:]) == without_recent(first[1:])


@pytest.mark.matrix
def test_a_page_overlapping_a_shown_one_fetches_the_summaries_of_the_rest_only(
    client: IMAPClient, sent: list[bytes]
) -> None:
    cache = SummaryCache()
    summaries(client, cache, limit=4)  # the newest 4 and the 5th (the page's neighbour) are described
    sent.clear()
    wider = summaries(client, cache, limit=8)
    assert len(wider) == 8
    items = fetched_items(sent)
    assert items[: len(ordering(client))] == ordering(client)
    items = items[len(ordering(client)) :]
    assert len(items) == 2 and b"ENVELOPE" in items[0] and items[1] == b"(FLAGS)"
    summary_fetch = next(line for line in sent if b"ENVELOPE" in line)
    described = set(expand(summary_fetch.split(b" FETCH ", 1)[1].split(b" ", 1)[0].decode()))
    shown_before = {message["uid"] for message in wider[:5]}  # the first page and its neighbour
    assert {message["uid"] for message in wider[5:]} <= described and not described & shown_before
    assert len(described) == 4  # the rest of the page and its new neighbour


def inbox_page(
    client: IMAPClient, order: OrderCache | None = None, cache: SummaryCache | None = None, **query: Any
) -> SearchPage:
    return search_page(client, examine(client, "INBOX"), SearchQuery(**query), order, cache)


def newest_date(page: SearchPage) -> dt.datetime:
    return dt.datetime.fromisoformat(page.messages[0].date or "")


@pytest.mark.servers("dovecot", "cyrus", reason="an order is kept only where CONDSTORE says what changed")
def test_a_few_arrivals_are_ordered_by_the_summaries_the_page_shows_instead_of_a_sort(
    account: Account, client: IMAPClient, sent: list[bytes]
) -> None:
    order, cache = OrderCache(), SummaryCache()
    first = inbox_page(client, order, cache, limit=5)
    # one later than everything, one at the same second as the newest (after it: the higher UID)
    append_message(account, plain_mail("later"), received=newest_date(first) + dt.timedelta(hours=1))
    append_message(account, plain_mail("tie"), received=newest_date(first))
    sent.clear()
    again = inbox_page(client, order, cache, limit=5)
    asked = list(sent)
    fresh = inbox_page(client, limit=5)
    assert [m.model_dump() for m in again.messages] == [m.model_dump() for m in fresh.messages]
    assert (again.total, again.messages[0].subject, again.messages[1].subject) == (first.total + 2, "later", "tie")
    assert (order.full, order.updates) == (1, 1)  # the first page's sort, then brought up to date
    assert not any(b" SORT " in line or b" SEARCH " in line for line in asked), asked
    assert [b"ENVELOPE" in items for items in fetched_items(asked)] == [True, False]  # the arrivals', then FLAGS


@pytest.mark.servers("dovecot", "cyrus", reason="an order is kept only where CONDSTORE says what changed")
def test_an_arrival_another_search_described_and_that_left_since_is_not_counted(
    account: Account, client: IMAPClient
) -> None:
    """The summary cache is shared by every search: a cached summary of a new UID does not say it is still there."""
    order, cache = OrderCache(), SummaryCache()
    first = inbox_page(client, order, cache, limit=5)
    uid = append_message(account, plain_mail("short-lived"), received=newest_date(first) + dt.timedelta(hours=1))
    unread = inbox_page(client, order, cache, limit=5, unread_only=True)
    assert unread.messages[0].uid == uid and cache.known(examine(client, "INBOX"), [uid])
    other = account.imap()
    try:
        other.select_folder("INBOX")
        other.add_flags([uid], [b"\\Deleted"])
        other.uid_expunge([uid])
    finally:
        other.logout()
    again, fresh = inbox_page(client, order, cache, limit=5), inbox_page(client, limit=5)
    assert (again.total, [m.uid for m in again.messages]) == (fresh.total, [m.uid for m in fresh.messages])
    assert (again.total, [m.uid for m in again.messages]) == (first.total, [m.uid for m in first.messages])


@pytest.mark.servers("dovecot", "cyrus", reason="an order is kept only where CONDSTORE says what changed")
def test_many_arrivals_are_sorted_by_the_server(account: Account, client: IMAPClient, sent: list[bytes]) -> None:
    order, cache = OrderCache(), SummaryCache()
    first = inbox_page(client, order, cache, limit=5)
    for n in range(21):
        append_message(account, plain_mail(f"new {n}"), received=newest_date(first) + dt.timedelta(minutes=n))
    sent.clear()
    again = inbox_page(client, order, cache, limit=5)
    assert [m.subject for m in again.messages] == [f"new {n}" for n in range(20, 15, -1)]
    assert any(b" SORT " in line for line in sent) or not client.has_capability("SORT")
    assert (order.full, order.updates) == (1, 1)


def fixed(uid: int) -> Fixed:
    return Fixed(id=f"id-{uid}", received=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), size=uid)


def test_the_cache_keeps_the_most_recently_used_up_to_its_bound() -> None:
    cache = SummaryCache(max_entries=3)
    inbox = Examined("INBOX", 7)
    cache.keep(inbox, {1: fixed(1), 2: fixed(2), 3: fixed(3)})
    assert cache.known(inbox, [1]) == {1: fixed(1)}  # 1 is now the most recently used
    cache.keep(inbox, {4: fixed(4)})
    assert len(cache) == 3
    assert cache.known(inbox, [1, 2, 3, 4]) == {1: fixed(1), 3: fixed(3), 4: fixed(4)}


def test_an_entry_names_one_message_of_one_mailbox_in_one_uidvalidity() -> None:
    cache = SummaryCache()
    cache.keep(Examined("INBOX", 7), {1: fixed(1)})
    assert cache.known(Examined("INBOX", 8), [1]) == {}
    assert cache.known(Examined("Archive", 7), [1]) == {}
    assert cache.known(Examined("INBOX", 7), [1]) == {1: fixed(1)}
