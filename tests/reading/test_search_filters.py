"""search_messages's further filters (cc, bcc, to_or_cc, size, keywords, answered, draft, attachments), the
oldest-first order and searches across mailboxes, each checked against the seeded mail and the server's own answer."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from gmail_like import GmailLikeServer
from harness import INBOX_NEWEST_FIRST, Account, append_message, error_text, search, served
from imapclient import IMAPClient

from imap_mcp.server.config import Settings
from imap_mcp.server.imap.fetch import fetch
from imap_mcp.server.imap.pool import examine
from imap_mcp.server.reading import search_query
from imap_mcp.server.reading.search import SearchQuery, search_page

#: the servers of the matrix that keep keywords
KEEPING_KEYWORDS = ("dovecot", "cyrus", "courier")

pytestmark = pytest.mark.anyio

BCC_NOTE = (
    b"From: demo@example.org\r\nTo: bob@example.net\r\nBcc: secret@example.net\r\nSubject: Quiet copy\r\n"
    b"Date: Thu, 15 Oct 2026 09:00:00 +0000\r\n\r\nfor your eyes\r\n"
)


def subjects(page: dict[str, Any]) -> list[str]:
    return [m["subject"] for m in page["messages"]]


def store(account: Account, mailbox: str, subject: str, flags: list[bytes]) -> None:
    """Put `flags` on the message of `mailbox` with `subject`, as another mail client would."""
    client = account.imap()
    try:
        client.select_folder(account.mailbox(mailbox))
        found = client.search(["SUBJECT", subject])
        assert len(found) == 1, found
        client.add_flags(found, flags, silent=True)
    finally:
        client.logout()


def server_answer(account: Account, criteria: list[Any], mailbox: str = "INBOX") -> set[int]:
    """The UIDs the server's own SEARCH finds for `criteria`."""
    client = account.imap()
    try:
        client.select_folder(account.mailbox(mailbox), readonly=True)
        return set(client.search(criteria))
    finally:
        client.logout()


def uids(page: dict[str, Any]) -> set[int]:
    return {m["uid"] for m in page["messages"]}


@pytest.mark.matrix
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"cc": "carol"}, ["Re: Project kickoff"], id="cc"),
        pytest.param({"to_or_cc": "carol@example.com"}, ["Re: Project kickoff"], id="to-or-cc-in-cc"),
        pytest.param({"to_or_cc": "ALICE@example.com"}, ["Re: Project kickoff"], id="to-or-cc-in-to"),
        pytest.param({"has_attachment": True}, ["Photos from the trip", "Invoice and overview"], id="attachment"),
        pytest.param(
            {"has_attachment": False, "since": "2026-10-09"},
            ["Urgent: account notice", "Re: Project kickoff", "Project kickoff", "Grüße aus München"],
            id="no-attachment",
        ),
        pytest.param({"answered": True}, [], id="none-answered"),
        pytest.param({"draft": False, "limit": 100}, INBOX_NEWEST_FIRST, id="none-draft"),
        pytest.param({"order": "oldest", "limit": 100}, INBOX_NEWEST_FIRST[::-1], id="oldest-first"),
        pytest.param(
            {"order": "oldest", "from": "alice"}, ["Quarterly report", "Project kickoff"], id="oldest-with-a-filter"
        ),
    ],
)
async def test_each_new_filter_is_done_by_the_server(
    account: Account, arguments: dict[str, Any], expected: list[str]
) -> None:
    async with served(account) as client:
        page = await search(client, **arguments)
    assert subjects(page) == expected
    assert page["total"] == len(expected)


@pytest.mark.matrix
async def test_bcc_and_the_draft_flag_find_what_the_server_finds(account: Account) -> None:
    append_message(account, BCC_NOTE, mailbox="Sent", received=dt.datetime(2026, 10, 15, 9, tzinfo=dt.UTC))
    async with served(account) as client:
        bcc = await search(client, mailbox=account.mailbox("Sent"), bcc="secret@")
        drafts = await search(client, mailbox=account.mailbox("Drafts"), draft=True)
        not_drafts = await search(client, mailbox=account.mailbox("Drafts"), draft=False)
    assert subjects(bcc) == ["Quiet copy"] and uids(bcc) == server_answer(account, ["BCC", "secret@"], "Sent")
    assert subjects(drafts) == ["Draft: notes for Friday"] and not_drafts["total"] == 0


async def sizes_larger_smaller_between(account: Account) -> tuple[dict[str, int], int, list[dict[str, Any]]]:
    """The INBOX's sizes as summaries give them, their median, and the searches larger than, smaller than and
    equal to (between one less and one more) the median."""
    async with served(account) as client:
        sizes = {m["subject"]: m["size"] for m in (await search(client, limit=100))["messages"]}
        middle = sorted(sizes.values())[len(sizes) // 2]
        pages = [
            await search(client, larger_than=middle, limit=100),
            await search(client, smaller_than=middle, limit=100),
            await search(client, larger_than=middle - 1, smaller_than=middle + 1),
        ]
    return sizes, middle, pages


@pytest.mark.matrix
async def test_sizes_are_the_servers_own_answer(account: Account) -> None:
    sizes, middle, (larger, smaller, _) = await sizes_larger_smaller_between(account)
    assert uids(larger) == server_answer(account, ["LARGER", middle])
    assert uids(smaller) == server_answer(account, ["SMALLER", middle])
    assert larger["total"] + smaller["total"] <= len(sizes)


@pytest.mark.servers(
    "dovecot", "cyrus", reason="Courier and Mailutils compare sizes as stored (LF line ends), not RFC822.SIZE"
)
async def test_sizes_are_compared_in_bytes_as_the_summaries_give_them(account: Account) -> None:
    sizes, middle, (larger, smaller, between) = await sizes_larger_smaller_between(account)
    assert set(subjects(larger)) == {s for s, size in sizes.items() if size > middle}
    assert set(subjects(smaller)) == {s for s, size in sizes.items() if size < middle}
    assert set(subjects(between)) == {s for s, size in sizes.items() if size == middle}


@pytest.mark.matrix
async def test_answered_as_another_client_set_it(account: Account) -> None:
    store(account, "INBOX", "Photos from the trip", [b"\\Answered"])
    async with served(account) as client:
        answered = await search(client, answered=True)
        unanswered = await search(client, answered=False, limit=100)
    assert subjects(answered) == ["Photos from the trip"] and uids(answered) == server_answer(account, ["ANSWERED"])
    assert subjects(unanswered) == [s for s in INBOX_NEWEST_FIRST if s != "Photos from the trip"]


@pytest.mark.servers(*KEEPING_KEYWORDS, reason="Mailutils keeps no keywords (a STORE of one is answered BAD)")
async def test_keywords_as_another_client_set_them(account: Account) -> None:
    store(account, "INBOX", "Quarterly report", [b"$Work"])
    async with served(account) as client:
        work = await search(client, keyword="$Work")
        other = await search(client, not_keyword="$Work", limit=100)
    assert subjects(work) == ["Quarterly report"] and uids(work) == server_answer(account, ["KEYWORD", "$Work"])
    assert subjects(other) == [s for s in INBOX_NEWEST_FIRST if s != "Quarterly report"]


@pytest.mark.servers("mailutils", reason="keeps no keywords: a keyword search finds nothing, its negation everything")
async def test_keywords_where_none_are_kept(account: Account) -> None:
    async with served(account) as client:
        work = await search(client, keyword="$Work")
        other = await search(client, not_keyword="$Work", limit=100)
    assert work["total"] == 0 and subjects(other) == INBOX_NEWEST_FIRST


@pytest.mark.servers("dovecot", "cyrus", reason="an order is kept only where CONDSTORE shows which flags changed")
async def test_a_flag_filter_follows_a_change_by_another_client_in_a_warm_process(account: Account) -> None:
    """The order cache re-checks the new flag filters (answered here) when flags changed, as unread_only."""
    async with served(account) as client:
        assert (await search(client, answered=True))["total"] == 0
        store(account, "INBOX", "Team lunch on Friday?", [b"\\Answered"])
        page = await search(client, answered=True)
    assert subjects(page) == ["Team lunch on Friday?"]


@pytest.mark.matrix
async def test_oldest_first_pages_have_no_gaps(account: Account) -> None:
    async with served(account) as client:
        pages = [await search(client, order="oldest", offset=offset, limit=4) for offset in (0, 4, 8, 12)]
    assert [len(p["messages"]) for p in pages] == [4, 4, 1, 0]
    assert [s for p in pages for s in subjects(p)] == INBOX_NEWEST_FIRST[::-1]


ACROSS_OLDEST = ["Quarterly report", "Old travel plans", "Re: Quarterly report", "Team lunch on Friday?"]


@pytest.mark.matrix
async def test_several_mailboxes_as_one_by_role_with_one_total_and_one_order(account: Account) -> None:
    async with served(account) as client:
        oldest = await search(client, mailboxes=["inbox", "sent", "archive"], order="oldest", limit=4)
        newest = await search(client, mailboxes=["inbox", "sent", "archive"], limit=100)
    assert oldest["total"] == newest["total"] == 11
    assert subjects(oldest) == ACROSS_OLDEST
    assert subjects(newest)[-4:] == ACROSS_OLDEST[::-1]
    assert oldest["mailboxes"] == [account.mailbox(name) for name in ("INBOX", "Sent", "Archive")]
    assert {m["mailbox"] for m in newest["messages"]} == set(oldest["mailboxes"])


@pytest.mark.matrix
async def test_every_mailbox_of_ones_own_pages_without_gaps(account: Account) -> None:
    async with served(account) as client:
        whole = await search(client, mailboxes=["*"], limit=100)
        pages = [await search(client, mailboxes=["*"], offset=offset, limit=5) for offset in (0, 5, 10)]
        filtered = await search(client, mailboxes=["*"], **{"from": "alice"})
    assert not any(name.startswith("Public/") for name in whole["mailboxes"])  # Dovecot's public namespace
    assert whole["total"] == 14 and [p["total"] for p in pages] == [14, 14, 14]
    assert [m["id"] for p in pages for m in p["messages"]] == [m["id"] for m in whole["messages"]]
    assert subjects(filtered) == ["Project kickoff", "Old travel plans", "Quarterly report"]


@pytest.mark.matrix
async def test_gmail_query_is_refused_where_the_server_does_not_offer_it(account: Account) -> None:
    async with served(account) as client:
        said = error_text(await client.call_tool("search_messages", {"gmail_query": "has:attachment"}))
    assert "X-GM-EXT-1" in said and "other filters" in said


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        pytest.param({"keyword": "two words"}, "pattern", id="keyword-not-an-atom"),
        pytest.param({"keyword": "(x)"}, "pattern", id="keyword-with-syntax"),
        pytest.param({"not_keyword": "\\Seen"}, "pattern", id="system-flag-as-keyword"),
        pytest.param({"keyword": "$A", "not_keyword": "$a"}, "no message can match", id="keyword-both-ways"),
        pytest.param({"larger_than": 10, "smaller_than": 11}, "leave no size", id="empty-size-window"),
        pytest.param({"larger_than": -1}, "accepted: a whole number from 0", id="negative-size"),
        pytest.param({"order": "random"}, "newest", id="unknown-order"),
        pytest.param({"mailboxes": ["*", "INBOX"]}, "give it alone", id="star-with-names"),
        pytest.param({"mailboxes": []}, "a list of 1 to 100 items", id="no-mailboxes"),
        pytest.param({"mailboxes": ["INBOX"], "mailbox": "Sent"}, "not both", id="mailbox-and-mailboxes"),
        pytest.param({"mailboxes": ["INBOX"], "offset": 990, "limit": 20}, "deeper than the 1000", id="too-deep"),
        pytest.param({"mailboxes": ["flagged"]}, "no mailbox here has the role 'flagged'", id="missing-role"),
        pytest.param({"mailboxes": ["No such folder"]}, "list_mailboxes", id="unknown-mailbox"),
    ],
)
async def test_mistakes_in_the_new_arguments_say_what_to_fix(
    account: Account, arguments: dict[str, Any], says: str
) -> None:
    async with served(account) as client:
        assert says in error_text(await client.call_tool("search_messages", arguments))


async def test_too_many_candidates_for_the_attachment_check_are_refused(
    account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_query, "MAX_ATTACHMENT_CANDIDATES", 3)
    async with served(account) as client:
        said = error_text(await client.call_tool("search_messages", {"has_attachment": True}))
        narrowed = await search(client, has_attachment=True, since="2026-10-06", before="2026-10-10")
    assert "9 messages match" in said and "Narrow the search" in said
    assert subjects(narrowed) == ["Photos from the trip", "Invoice and overview"]


@contextlib.contextmanager
def gmail_like(account: Account) -> Iterator[tuple[Settings, GmailLikeServer]]:
    """Settings that reach the account through a Dovecot made to look like Gmail (`gmail_like`)."""
    with GmailLikeServer(account.dovecot.port) as server:
        yield Settings(imap=dataclasses.replace(account.imap_settings("none"), port=server.port)), server


async def test_gmail_query_goes_to_the_server_as_x_gm_raw_where_it_is_offered(account: Account) -> None:
    with gmail_like(account) as (settings, server):
        async with served(settings) as client:
            page = await search(client, gmail_query="revenue is up", since="2026-10-01")
    assert subjects(page) == ["Quarterly report"] and page["total"] == 1
    assert any(b'X-GM-RAW "revenue is up"' in line for line in server.commands)


@pytest.mark.servers(*KEEPING_KEYWORDS, reason="Mailutils keeps no keywords (a STORE of one is answered BAD)")
async def test_a_keyword_is_found_in_any_case_as_imap_compares_flags(account: Account) -> None:
    store(account, "INBOX", "Quarterly report", [b"$Work"])
    async with served(account) as client:
        lower = await search(client, keyword="$work")
        upper = await search(client, not_keyword="$WORK", limit=100)
    assert subjects(lower) == ["Quarterly report"]
    assert subjects(upper) == [s for s in INBOX_NEWEST_FIRST if s != "Quarterly report"]


def test_a_structure_is_fetched_once_and_then_remembered(
    account: Account, client: IMAPClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched: list[Any] = []

    def counted(session: IMAPClient, uids: Sequence[int] | str, items: list[str]) -> Any:
        fetched.append(uids)
        return fetch(session, uids, items)

    monkeypatch.setattr(search_query, "fetch", counted)
    memory, examined = search_query.AttachmentMemory(), examine(client, "INBOX")
    query = SearchQuery(has_attachment=True)
    first = search_page(client, examined, query, attachments=memory)
    again = search_page(client, examined, query, attachments=memory)
    assert [m.subject for m in first.messages] == [m.subject for m in again.messages]
    assert [m.subject for m in again.messages] == ["Photos from the trip", "Invoice and overview"]
    assert len(fetched) == 1  # the nine structures once, then none
    append_message(account, b"Subject: later\r\nFrom: x@example.com\r\n\r\nhello\r\n")
    search_page(client, examine(client, "INBOX"), query, attachments=memory)
    assert len(fetched) == 2 and len(fetched[-1]) == 1  # only the new message's
