"""list_new_messages on every server of the matrix: the last look kept as a keyword in the mailbox itself.

First look, nothing twice, new mail, paging while mail arrives, UIDVALIDITY changes, marks removed by another
client, concurrent callers, a mailbox that cannot keep keywords, annotations, no question to a person.
Mailutils keeps no keywords at all: there the tool is refused (the last test), and only that is tested.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any

import pytest
from harness import INBOX_NEWEST_FIRST, MODES, Account, Person, error_text, served, structured
from imapclient import IMAPClient

from imap_mcp.server.imap.message_ids import decode_id
from imap_mcp.server.reading.new_messages import LISTED, list_new, look, record

#: the servers that keep keywords (Mailutils keeps none: the tool is refused there)
KEEPING_KEYWORDS = ("dovecot", "cyrus", "courier")
pytestmark = [pytest.mark.anyio, pytest.mark.servers(*KEEPING_KEYWORDS, reason="the last look is a keyword")]

#: the sample INBOX messages a person has read already
READ_BEFORE = {"Quarterly report", "Invoice and overview", "Project kickoff"}


def subjects(page: dict[str, Any]) -> list[str]:
    return [m["subject"] for m in page["messages"]]


def arrival(subject: str, day: int) -> bytes:
    """A new message received on 2026-11-`day` (after every sample message)."""
    message = EmailMessage()
    message["From"] = "Carol <carol@example.com>"
    message["To"] = "demo@example.org"
    message["Subject"] = subject
    message["Date"] = format_datetime(dt.datetime(2026, 11, day, 8, 0, tzinfo=dt.UTC))
    message.set_content("New mail.\n")
    return message.as_bytes()


def deliver(account: Account, subject: str, day: int, mailbox: str = "INBOX") -> int:
    """Append a new message as the mail system would, with INTERNALDATE on `day`; its UID."""
    client = account.imap()
    try:
        when = dt.datetime(2026, 11, day, 8, 0, tzinfo=dt.UTC)
        response = client.append(account.mailbox(mailbox), arrival(subject, day), msg_time=when)
        return int(response.split(b"]")[0].split()[-1])
    finally:
        client.logout()


def flags_by_subject(account: Account, mailbox: str = "INBOX") -> dict[str, set[bytes]]:
    client = account.imap()
    try:
        client.select_folder(account.mailbox(mailbox), readonly=True)
        found = client.fetch(client.search(["ALL"]), ["FLAGS", "ENVELOPE"])
        return {data[b"ENVELOPE"].subject.decode(): set(data[b"FLAGS"]) for data in found.values()}
    finally:
        client.logout()


def remove_mark(account: Account, subjects_to_clear: list[str] | None) -> None:
    """Another mail client takes the keyword off these messages (None: off every message)."""
    client = account.imap()
    try:
        client.select_folder("INBOX")
        uids = client.search(["ALL"]) if subjects_to_clear is None else []
        for subject in subjects_to_clear or []:
            uids += client.search(["SUBJECT", subject])
        client.remove_flags(uids, [LISTED], silent=True)
    finally:
        client.logout()


async def new_messages(client: Any, **arguments: Any) -> dict[str, Any]:
    return structured(await client.call_tool("list_new_messages", arguments))


@pytest.mark.parametrize("mode", MODES)
async def test_the_first_call_lists_what_is_there_and_the_second_nothing(account: Account, mode: str) -> None:
    async with served(account, mode=mode) as client:
        first = await new_messages(client)
        second = await new_messages(client)
    assert first["first_look"] is True
    assert (first["total"], first["offset"], first["remaining"]) == (9, 0, 0)
    assert subjects(first) == INBOX_NEWEST_FIRST
    assert first["messages"][0]["id"].startswith("imap.") and first["messages"][0]["mailbox"] == "INBOX"
    del second["fence"]  # new for every result
    assert second == {
        "notes": [],
        "mailbox": "INBOX",
        "first_look": False,
        "total": 0,
        "offset": 0,
        "messages": [],
        "remaining": 0,
    }


async def test_summaries_are_those_of_search_and_the_read_state_is_untouched(account: Account) -> None:
    async with served(account) as client:
        searched = structured(await client.call_tool("search_messages", {"limit": 20}))
        listed = await new_messages(client)
        searched_after = structured(await client.call_tool("search_messages", {"limit": 20}))  # same pool
    assert listed["messages"] == searched["messages"]
    assert [m["id"] for m in searched_after["messages"]] == [m["id"] for m in searched["messages"]]
    assert all("$ImapMcpListed" in m["flags"] for m in searched_after["messages"])
    flags = flags_by_subject(account)
    assert {s for s, f in flags.items() if b"\\Seen" in f} == READ_BEFORE
    assert all(LISTED in f for f in flags.values())


@pytest.mark.parametrize("mode", MODES)
async def test_mail_that_arrives_later_is_listed_once(account: Account, mode: str) -> None:
    async with served(account, mode=mode) as client:
        await new_messages(client)
        deliver(account, "First arrival", 2)
        deliver(account, "Second arrival", 3)
        arrived = await new_messages(client)
        again = await new_messages(client)
    assert arrived["first_look"] is False
    assert (arrived["total"], arrived["remaining"]) == (2, 0)
    assert subjects(arrived) == ["Second arrival", "First arrival"]
    assert again["total"] == 0 and again["messages"] == []


async def test_paging_while_mail_arrives_lists_each_message_exactly_once(account: Account) -> None:
    pages = []
    async with served(account) as client:
        pages.append(await new_messages(client, limit=4))
        deliver(account, "Arrived between pages", 2)
        pages.append(await new_messages(client, limit=4))
        pages.append(await new_messages(client, limit=4))
        pages.append(await new_messages(client, limit=4))
    assert [(p["total"], len(p["messages"]), p["remaining"]) for p in pages] == [
        (9, 4, 5),
        (6, 4, 2),
        (2, 2, 0),
        (0, 0, 0),
    ]
    assert subjects(pages[0]) == INBOX_NEWEST_FIRST[:4]
    assert subjects(pages[1]) == ["Arrived between pages", *INBOX_NEWEST_FIRST[4:7]]
    assert subjects(pages[2]) == INBOX_NEWEST_FIRST[7:]


async def test_an_offset_skips_messages_that_stay_new(account: Account) -> None:
    async with served(account) as client:
        skipping = await new_messages(client, offset=2, limit=3)
        rest = await new_messages(client)
    assert (skipping["total"], skipping["offset"], skipping["remaining"]) == (9, 2, 6)
    assert subjects(skipping) == INBOX_NEWEST_FIRST[2:5]
    assert subjects(rest) == INBOX_NEWEST_FIRST[:2] + INBOX_NEWEST_FIRST[5:]
    assert rest["first_look"] is False


async def test_a_recreated_mailbox_is_a_first_look_under_its_new_uidvalidity(account: Account) -> None:
    feed = account.mailbox("Feed")
    direct = account.imap()
    try:
        direct.create_folder(feed)
        async with served(account) as client:
            deliver(account, "Old one", 2, "Feed")
            before = await new_messages(client, mailbox=feed)
            direct.delete_folder(feed)
            await asyncio.sleep(1.1)  # a server that takes UIDVALIDITY from the clock gives the new mailbox another
            direct.create_folder(feed)
            deliver(account, "Fresh one", 3, "Feed")
            after = await new_messages(client, mailbox=feed)
        uidvalidity = int(direct.folder_status(feed, [b"UIDVALIDITY"])[b"UIDVALIDITY"])
    finally:
        direct.logout()
    assert subjects(before) == ["Old one"] and subjects(after) == ["Fresh one"]
    assert after["first_look"] is True
    assert decode_id(after["messages"][0]["id"]).uidvalidity == uidvalidity
    assert decode_id(before["messages"][0]["id"]).uidvalidity != uidvalidity


async def test_a_mark_removed_by_another_client_makes_that_message_new_again(account: Account) -> None:
    async with served(account) as client:
        await new_messages(client)
        remove_mark(account, ["Photos from the trip"])
        one = await new_messages(client)
        remove_mark(account, None)
        every = await new_messages(client)
    assert (one["first_look"], subjects(one)) == (False, ["Photos from the trip"])
    assert (every["first_look"], subjects(every)) == (True, INBOX_NEWEST_FIRST)


async def test_concurrent_callers_lose_nothing(account: Account) -> None:
    for day in range(2, 12):
        deliver(account, f"Burst {day}", day)
    async with served(account) as first, served(account) as second:
        pages = await asyncio.gather(*(new_messages(c, limit=3) for c in (first, second) * 4))
        pages.append(await new_messages(first, limit=100))  # whatever the burst of calls left new
        last = await new_messages(second)
    listed = {s for page in pages for s in subjects(page)}
    assert listed == set(INBOX_NEWEST_FIRST) | {f"Burst {day}" for day in range(2, 12)}
    assert last["total"] == 0


def two_connections(account: Account) -> tuple[IMAPClient, IMAPClient]:
    return account.imap(), account.imap()


@pytest.mark.servers("dovecot", "cyrus", reason="CONDSTORE: a conditional STORE decides which caller lists a message")
async def test_two_interleaved_callers_never_list_the_same_message(account: Account) -> None:
    slow, fast = two_connections(account)
    try:
        found = look(slow, "INBOX", 0, 20)  # the slow caller has searched and summarised, not yet marked
        fast_answer = list_new(fast, "INBOX", 0, 20)
        slow_answer = record(slow, found)
    finally:
        slow.logout()
        fast.logout()
    assert [m.subject for m in fast_answer.messages] == INBOX_NEWEST_FIRST
    assert [m.subject for m in found.page] == INBOX_NEWEST_FIRST
    assert slow_answer.messages == [] and slow_answer.remaining == 9


@pytest.mark.servers("courier", reason="Courier has no CONDSTORE: the documented at-least-once case")
async def test_without_condstore_two_interleaved_callers_both_list(account: Account) -> None:
    slow, fast = two_connections(account)
    try:
        found = look(slow, "INBOX", 0, 20)
        fast_answer = list_new(fast, "INBOX", 0, 20)
        slow_answer = record(slow, found)
        assert not slow.has_capability("CONDSTORE")
    finally:
        slow.logout()
        fast.logout()
    assert [m.subject for m in fast_answer.messages] == [m.subject for m in slow_answer.messages] == INBOX_NEWEST_FIRST


@pytest.mark.servers("dovecot", reason="annotations, and no question to a person: the same on every server")
async def test_the_call_asks_no_one_and_states_its_annotations(account: Account) -> None:
    person = Person()
    async with served(account, mode="legacy", elicitation_callback=person) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        listed = await new_messages(client, limit=1)
    hints = tools["list_new_messages"].annotations.model_dump(by_alias=True, exclude_none=True)  # type: ignore[union-attr]
    assert (hints["readOnlyHint"], hints["destructiveHint"], hints["idempotentHint"], hints["openWorldHint"]) == (
        False,
        False,
        False,
        True,
    )
    assert len(listed["messages"]) == 1 and person.shown == []


@pytest.mark.servers(*KEEPING_KEYWORDS, "mailutils", reason="arguments are checked on every server")
@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        pytest.param({"mailbox": "No such box"}, "cannot be opened", id="missing-mailbox"),
        pytest.param({"limit": 0}, "limit", id="limit-too-small"),
        pytest.param({"limit": 101}, "limit", id="limit-too-large"),
        pytest.param({"offset": -1}, "offset", id="negative-offset"),
    ],
)
async def test_bad_arguments_are_refused_and_change_nothing(
    account: Account, arguments: dict[str, Any], said: str
) -> None:
    async with served(account) as client:
        assert said in error_text(await client.call_tool("list_new_messages", arguments))
    assert not any(LISTED in f for f in flags_by_subject(account).values())


@pytest.mark.dovecot_only(reason="doveadm renumbers a mailbox in place, keeping its messages and their keywords")
async def test_a_renumbered_mailbox_keeps_its_last_look(account: Account) -> None:
    async with served(account) as client:
        before = await new_messages(client)
        validity = decode_id(before["messages"][0]["id"]).uidvalidity
        account.dovecot.doveadm(
            "mailbox", "update", "-u", account.username, "--uid-validity", str(validity + 1), "INBOX"
        )
        deliver(account, "After renumbering", 2)
        after = await new_messages(client)
    assert (after["first_look"], subjects(after)) == (False, ["After renumbering"])
    assert decode_id(after["messages"][0]["id"]).uidvalidity == validity + 1


@pytest.mark.servers("cyrus", reason="RFC 4314 ACLs: a mailbox whose user may read but not write keywords")
async def test_a_mailbox_that_cannot_keep_the_keyword_is_refused_untouched(account: Account) -> None:
    feed = account.mailbox("Feed")
    client = account.imap()
    try:
        client.create_folder(feed)
        deliver(account, "Kept as it is", 2, "Feed")
        # no "w" (writing flags other than \\Seen and \\Deleted); Cyrus keeps an owner's "a" in any case
        client.setacl(feed, account.username, "lrsxa")
        permanent = client.select_folder(feed)[b"PERMANENTFLAGS"]
    finally:
        client.logout()
    assert b"\\*" not in permanent and LISTED not in permanent
    async with served(account) as mcp_client:
        said = error_text(await mcp_client.call_tool("list_new_messages", {"mailbox": feed}))
    assert "cannot record what it has listed" in said and "Nothing was listed or changed" in said
    assert flags_by_subject(account, "Feed") == {"Kept as it is": set()}


@pytest.mark.servers("mailutils", reason="its PERMANENTFLAGS hold no \\* and STORE refuses any keyword")
async def test_a_server_that_keeps_no_keywords_is_refused_untouched(account: Account) -> None:
    client = account.imap()
    try:
        permanent = client.select_folder("INBOX")[b"PERMANENTFLAGS"]
    finally:
        client.logout()
    assert b"\\*" not in permanent and LISTED not in permanent
    before = flags_by_subject(account)
    async with served(account) as mcp_client:
        said = error_text(await mcp_client.call_tool("list_new_messages", {}))
    assert "cannot record what it has listed" in said and "Nothing was listed or changed" in said
    assert flags_by_subject(account) == before
