"""search_messages against Dovecot: every filter, newest first, exact totals, paging, argument mistakes."""

from __future__ import annotations

import datetime as dt
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any

import pytest
from harness import INBOX_NEWEST_FIRST, MODES, Account, append_message, error_text, search, served

from imap_mcp.server.imap.message_ids import decode_id
from imap_mcp.server.imap.pool import ImapPool

pytestmark = pytest.mark.anyio


def subjects(page: dict[str, Any]) -> list[str]:
    return [m["subject"] for m in page["messages"]]


@pytest.mark.matrix
@pytest.mark.parametrize("mode", MODES)
async def test_the_newest_messages_come_first_with_the_exact_total(account: Account, mode: str) -> None:
    async with served(account, mode=mode) as client:
        page = await search(client, limit=3)
    assert page["total"] == 9
    assert subjects(page) == INBOX_NEWEST_FIRST[:3]
    first = page["messages"][0]
    assert first["id"].startswith("imap.") and decode_id(first["id"]).uid == first["uid"]
    assert first["mailbox"] == "INBOX"
    assert first["from"] == "Mallory <mallory@attacker.example>"
    assert first["to"] == ["demo@example.org"]
    assert first["date"] == "2026-10-14T09:00:00+00:00"
    assert first["unread"] is True and first["flagged"] is False and first["size"] > 0


@pytest.mark.matrix
async def test_summaries_carry_flags_and_attachments(account: Account) -> None:
    async with served(account) as client:
        page = await search(client)
    by_subject = {m["subject"]: m for m in page["messages"]}
    assert by_subject["Team lunch on Friday?"]["flagged"] is True
    assert "\\Flagged" in by_subject["Team lunch on Friday?"]["flags"]
    assert by_subject["Quarterly report"]["unread"] is False
    assert by_subject["Invoice and overview"]["has_attachments"] is True
    assert by_subject["Photos from the trip"]["has_attachments"] is True  # nested in multipart/mixed
    assert by_subject["Team lunch on Friday?"]["has_attachments"] is False  # multipart/alternative only


@pytest.mark.matrix
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"from": "alice@example.com"}, ["Project kickoff", "Quarterly report"], id="from"),
        pytest.param({"from": "BOB BUILDER"}, ["Re: Project kickoff", "Team lunch on Friday?"], id="from-any-case"),
        pytest.param({"to": "alice@example.com"}, ["Re: Project kickoff"], id="to"),
        pytest.param({"subject": "kickoff"}, ["Re: Project kickoff", "Project kickoff"], id="subject"),
        pytest.param({"text": "revenue is up"}, ["Quarterly report"], id="text-in-body"),
        pytest.param({"text": "shop.example"}, ["Your weekly deals"], id="text-in-headers"),
        pytest.param({"subject": "grüße"}, ["Grüße aus München"], id="non-ascii-subject"),
        pytest.param({"text": "nächste Woche"}, ["Grüße aus München"], id="non-ascii-body"),
        pytest.param({"from": "Jörg"}, ["Grüße aus München"], id="non-ascii-sender-name"),
        pytest.param({"unread_only": True, "subject": "kickoff"}, ["Re: Project kickoff"], id="unread"),
        pytest.param({"flagged_only": True}, ["Team lunch on Friday?"], id="flagged"),
        pytest.param({"since": "2026-10-12"}, INBOX_NEWEST_FIRST[:3], id="since-is-inclusive"),
        pytest.param({"before": "2026-10-05"}, INBOX_NEWEST_FIRST[-2:], id="before-is-exclusive"),
        pytest.param({"since": "2026-10-05", "before": "2026-10-09"}, INBOX_NEWEST_FIRST[-4:-2], id="date-range"),
        pytest.param({"subject": "kickoff", "from": "alice"}, ["Project kickoff"], id="conditions-are-anded"),
        pytest.param({"subject": "no such words here"}, [], id="nothing"),
    ],
)
async def test_each_filter_is_done_by_the_server(
    account: Account, arguments: dict[str, Any], expected: list[str]
) -> None:
    async with served(account) as client:
        page = await search(client, **arguments)
    assert subjects(page) == expected
    assert page["total"] == len(expected)


@pytest.mark.matrix
async def test_another_mailbox_with_a_non_ascii_name(account: Account) -> None:
    async with served(account) as client:
        page = await search(client, mailbox=account.mailbox("Projects/Entwürfe"))
    assert subjects(page) == ["Entwurf der Präsentation"]
    assert decode_id(page["messages"][0]["id"]).mailbox == account.mailbox("Projects/Entwürfe")


@pytest.mark.matrix
async def test_pages_have_no_gaps_or_duplicates_and_a_stable_total(account: Account) -> None:
    async with served(account) as client:
        pages = [await search(client, offset=offset, limit=4) for offset in (0, 4, 8, 12)]
    assert [p["total"] for p in pages] == [9, 9, 9, 9]
    assert [len(p["messages"]) for p in pages] == [4, 4, 1, 0]
    ids = [m["id"] for p in pages for m in p["messages"]]
    assert len(set(ids)) == 9
    assert [s for p in pages for s in subjects(p)] == INBOX_NEWEST_FIRST


@pytest.mark.matrix
async def test_newest_means_received_last_not_appended_last(account: Account) -> None:
    """A message appended now but received on 2 October sorts between the 1st and the 3rd."""
    late = EmailMessage()
    late["Subject"] = "Delivered late"
    late["Date"] = format_datetime(dt.datetime(2026, 10, 2, 9, tzinfo=dt.UTC))
    late.set_content("old news\n")
    client = account.imap()
    try:
        client.append("INBOX", late.as_bytes(), msg_time=dt.datetime(2026, 10, 2, 9, tzinfo=dt.UTC))
    finally:
        client.logout()
    async with served(account) as mcp_client:
        page = await search(mcp_client)
    assert subjects(page)[-3:] == ["Team lunch on Friday?", "Delivered late", "Quarterly report"]


@pytest.mark.matrix
async def test_a_message_that_arrives_later_is_found_by_a_warm_process(account: Account) -> None:
    async with served(account) as client:
        assert (await search(client))["total"] == 9
        append_message(account, b"Subject: Fresh arrival\r\nFrom: x@example.com\r\n\r\nhello\r\n")
        page = await search(client, limit=1)
    assert page["total"] == 10 and subjects(page) == ["Fresh arrival"]


@pytest.mark.matrix
@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        pytest.param(
            {"limit": 101}, "'limit' was given 101; accepted: a whole number from 1 to 100", id="limit-too-big"
        ),
        pytest.param({"limit": 0}, "'limit' was given 0; accepted: a whole number from 1", id="limit-zero"),
        pytest.param({"offset": -1}, "'offset' was given -1; accepted: a whole number", id="negative-offset"),
        pytest.param({"since": "12/10/2026"}, "accepted: a date, YYYY-MM-DD", id="bad-date"),
        pytest.param({"since": "0001-01-01"}, "give a date from 1900-01-01 on", id="since-year-1"),
        pytest.param({"before": "0999-01-01"}, "give a date from 1900-01-01 on", id="before-year-999"),
        pytest.param({"since": "2026-10-09", "before": "2026-10-09"}, "must be earlier than before", id="empty-range"),
        pytest.param(
            {"subject": "a\r\nb"},
            "'subject' was given \"a\\r\\nb\"; accepted: text of 1 to 500 characters matching",
            id="line-break-in-text",
        ),
        pytest.param(
            {"subject": ""}, "'subject' was given \"\"; accepted: text of 1 to 500 characters", id="empty-text"
        ),
        pytest.param({"mailbox": "No such folder"}, "list_mailboxes", id="unknown-mailbox"),
    ],
)
async def test_argument_mistakes_are_tool_errors_that_say_what_to_fix(
    account: Account, arguments: dict[str, Any], says: str
) -> None:
    async with served(account) as client:
        assert says in error_text(await client.call_tool("search_messages", arguments))


async def test_annotations_are_stated_in_full(account: Account) -> None:
    async with served(account) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, title in (("search_messages", "Search messages"), ("get_message", "Read a message")):
        wire = tools[name].annotations.model_dump(by_alias=True, exclude_none=True)  # type: ignore[union-attr]
        assert wire == {
            "title": title,
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": True,
        }
        assert tools[name].title == title
    assert "from" in tools["search_messages"].input_schema["properties"]


#: subjects full of IMAP syntax: each search value must reach the server as one string
SYNTAX_SUBJECTS = [
    "Agenda (draft)",
    "Notes draft) end",
    "Count {5} items",
    "Plus {5+} items",
    'Quote "x" and back\\slash',
    "Entwurf (Änderung) {7}",
]


def syntax_message(subject: str) -> bytes:
    message = EmailMessage()
    message["From"] = "syntax@example.com"
    message["Subject"] = subject
    message.set_content("x\n")
    return message.as_bytes()


@pytest.mark.matrix
@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        pytest.param("(draft)", ["Agenda (draft)"], id="parenthesised"),
        pytest.param("draft)", ["Agenda (draft)", "Notes draft) end"], id="closing-parenthesis"),
        pytest.param("{5}", ["Count {5} items"], id="literal-announcement"),
        pytest.param("{5+}", ["Plus {5+} items"], id="non-synchronising-literal"),
        pytest.param('"x" and back\\slash', ['Quote "x" and back\\slash'], id="quote-and-backslash"),
        pytest.param("(Änderung) {7}", ["Entwurf (Änderung) {7}"], id="non-ascii-with-syntax"),
    ],
)
async def test_search_values_are_strings_never_imap_syntax(account: Account, subject: str, expected: list[str]) -> None:
    for text in SYNTAX_SUBJECTS:
        append_message(account, syntax_message(text))
    pool = ImapPool(account.imap_settings(), max_size=1)  # one connection: a lost one would show as a second
    async with served(account, pool=pool) as client:
        page = await search(client, subject=subject)
    pool.close_all()
    assert sorted(subjects(page)) == sorted(expected) and page["total"] == len(expected)
    assert pool.opened == 1  # the connection was never lost waiting for a literal


async def test_a_page_is_20_by_default_and_up_to_100(account: Account) -> None:
    client = account.imap()
    try:
        for n in range(25):
            client.append("INBOX", f"Subject: bulk {n}\r\nFrom: bulk@example.com\r\n\r\nx\r\n".encode())
    finally:
        client.logout()
    async with served(account) as mcp_client:
        default = await search(mcp_client)
        widest = await search(mcp_client, limit=100)
    assert (default["total"], len(default["messages"])) == (34, 20)
    assert (widest["total"], len(widest["messages"])) == (34, 34)
