"""move_messages against Dovecot: MOVE, the COPY + UID EXPUNGE fallback, a server with neither, ranges."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from harness import Account, Person, error_text, message_ids, pool_without, served, start_dovecot
from harness import new_account as fresh_account
from mcp.types import TextContent

from imap_mcp.server.demo.sample_mail import seed
from imap_mcp.server.imap.by_message_id import parse_message_id
from imap_mcp.server.imap.message_ids import MessageRef, decode_id
from imap_mcp.server.imap.uid_sets import compress, expand
from imap_mcp.server.tools.results import LISTED_IDS_MAX

pytestmark = pytest.mark.anyio
#: moves need MOVE or UIDPLUS, which Mailutils lacks: there they are refused (the test after the Dovecot one below)
MOVING = pytest.mark.servers("dovecot", "cyrus", "courier", reason="Mailutils has neither MOVE nor UIDPLUS")


async def move(account: Account, args: dict[str, Any], pool: Any = None) -> Any:
    async with served(account, pool=pool, mode="legacy", elicitation_callback=Person()) as c:
        return await c.call_tool("move_messages", account.on_server(args))


def test_uid_sets_are_compressed_into_ranges() -> None:
    assert compress([5, 1, 2, 3, 9, 10, 12, 2]) == "1:3,5,9:10,12"
    assert compress(range(1, 20001)) == "1:20000"
    assert expand("1:3,5,9:7") == [1, 2, 3, 5, 9, 8, 7]


@MOVING
async def test_a_move_returns_the_new_ids_and_leaves_the_source(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    result = await move(account, {"ids": ids[:2], "destination": "Archive"})
    content = result.structured_content
    assert content["status"] == "done" and content["approved_by"] == "push" and content["count"] == 2
    assert content["new_ids"] == message_ids(account, "Archive")[1:]
    assert message_ids(account, "INBOX") == ids[2:]


@pytest.mark.dovecot_only(reason="the session's Dovecot has the public namespace")
async def test_a_move_into_the_public_namespace(account: Account) -> None:
    public = f"Public/t-{uuid.uuid4().hex[:8]}"
    direct = account.imap()
    direct.create_folder(public)
    direct.logout()
    ids = message_ids(account, "INBOX")
    result = await move(account, {"ids": ids[:1], "destination": public})
    assert result.structured_content["new_ids"] == message_ids(account, public)


@MOVING
async def test_without_move_it_copies_then_expunges_exactly_the_moved_uids(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    other = account.imap()
    other.select_folder("INBOX")
    other.add_flags([6], [b"\\Deleted"])
    other.logout()
    result = await move(account, {"ids": ids[:3], "destination": "Archive"}, pool_without(account, ("MOVE",)))
    assert result.structured_content["count"] == 3 and len(result.structured_content["new_ids"]) == 3
    assert message_ids(account, "INBOX") == ids[3:]  # UID 6, marked \Deleted by another client, stays


async def test_a_server_with_neither_move_nor_uidplus_refuses_a_move_but_copies() -> None:
    dovecot = start_dovecot(hide_move=True)
    try:
        account = fresh_account(dovecot)
        direct = account.imap()
        seed(direct)
        direct.logout()
        ids = message_ids(account, "INBOX")
        refused = await move(account, {"ids": ids[:1], "destination": "Archive"})
        assert refused.is_error and "neither MOVE nor UIDPLUS" in refused.content[0].text
        assert "Nothing was changed; move_messages with mode 'copy' still works" in refused.content[0].text
        copied = await move(account, {"ids": ids[:1], "destination": "Archive", "mode": "copy"})
        assert copied.structured_content["status"] == "done"
        person = Person()
        async with served(account, mode="legacy", elicitation_callback=person) as client:
            not_trashed = await client.call_tool("delete_messages", {"ids": ids[:1]})
        assert isinstance(not_trashed.content[0], TextContent)
        said = not_trashed.content[0].text
        assert not_trashed.is_error and "neither MOVE nor UIDPLUS" in said and "Nothing was changed" in said
        assert "delete them with another mail client" in said and person.shown == []
        assert message_ids(account, "INBOX") == ids and len(message_ids(account, "Archive")) == 2
        assert message_ids(account, "Trash") == []
    finally:
        dovecot.stop()


@pytest.mark.servers("mailutils", reason="the matrix's server with neither MOVE nor UIDPLUS")
async def test_on_a_server_with_neither_move_nor_uidplus_moves_and_deletes_are_refused(account: Account) -> None:
    """A real server without them: a move, a trash-delete and a permanent delete are refused before anyone is
    asked, and nothing changes; a copy runs."""
    ids = message_ids(account, "INBOX")
    person = Person()
    async with served(account, mode="legacy", elicitation_callback=person) as client:
        moved = await client.call_tool("move_messages", {"ids": ids[:1], "destination": "Archive"})
        trashed = await client.call_tool("delete_messages", {"ids": ids[:1]})
        deleted = await client.call_tool("delete_messages", {"ids": ids[:1], "permanent": True})
        copied = await client.call_tool("move_messages", {"ids": ids[:1], "destination": "Archive", "mode": "copy"})
    assert "neither MOVE nor UIDPLUS" in error_text(moved) and "neither MOVE nor UIDPLUS" in error_text(trashed)
    assert "does not offer UIDPLUS" in error_text(deleted)
    assert all("Nothing was changed" in error_text(result) for result in (moved, trashed, deleted))
    assert len(person.shown) == 1 and "Copy 1 message" in person.shown[0]  # only the copy asked anyone
    assert copied.structured_content["status"] == "done"
    assert message_ids(account, "INBOX") == ids and len(message_ids(account, "Archive")) == 2
    assert message_ids(account, "Trash") == []


@MOVING
async def test_a_huge_uid_set_goes_to_the_server_as_ranges(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    uidvalidity = int(inbox[0].split(".")[2])
    far = range(4_000_000_000, 4_000_006_000)  # sent verbatim, these 6000 UIDs alone pass Dovecot's 64 KB line
    ids = inbox + [MessageRef("INBOX", uidvalidity, uid).id for uid in far]
    result = await move(account, {"ids": ids, "destination": "Archive"})
    content = result.structured_content
    assert not result.is_error, result.content
    assert content["count"] == len(inbox) and content["missing_count"] == len(far)
    assert len(content["missing_ids"]) == LISTED_IDS_MAX and "4000000000:4000005999" in content["rest"]
    assert len(result.content[0].text) + len(json.dumps(content)) < 20_000
    assert message_ids(account, "INBOX") == []


@MOVING
async def test_a_move_to_a_missing_mailbox_is_refused(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    missing = await move(account, {"ids": ids[:1], "destination": "Nowhere"})
    assert missing.is_error and "create it first" in missing.content[0].text


@pytest.mark.parametrize("destination", ["INBOX", "inbox", "Inbox"])
@pytest.mark.parametrize("mode", ["move", "copy"])
async def test_a_move_or_copy_into_the_same_mailbox_is_refused_before_anyone_is_asked(
    account: Account, destination: str, mode: str
) -> None:
    ids = message_ids(account, "INBOX")
    person = Person()
    async with served(account, mode="legacy", elicitation_callback=person) as client:
        itself = await client.call_tool("move_messages", {"ids": ids[:1], "destination": destination, "mode": mode})
    assert isinstance(itself.content[0], TextContent)
    assert itself.is_error and "already in 'INBOX'" in itself.content[0].text
    assert "choose another destination" in itself.content[0].text and person.shown == []
    assert message_ids(account, "INBOX") == ids


@MOVING
async def test_a_move_to_inbox_in_another_case_names_it_inbox(account: Account) -> None:
    archived = message_ids(account, "Archive")
    result = await move(account, {"ids": archived, "destination": "inbox"})
    assert result.structured_content["destination"] == "INBOX"
    assert result.structured_content["new_ids"] == message_ids(account, "INBOX")[-1:]


def message_id_census(account: Account, mailbox: str) -> list[str]:
    """Every Message-ID in `mailbox` (named as `Account.mailbox` takes it), sorted, one entry per message."""
    client = account.imap()
    try:
        client.select_folder(account.mailbox(mailbox), readonly=True)
        fetched = client.fetch(client.search("ALL"), ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
    finally:
        client.logout()
    return sorted(
        str(parse_message_id(next(v for k, v in data.items() if k.startswith(b"BODY[HEADER"))))
        for data in fetched.values()
    )


def copied_directly(account: Account, ids: list[str], destination: str) -> None:
    """COPY the messages of `ids` (of INBOX) into `destination` straight on the server: another client did it."""
    client = account.imap()
    try:
        client.select_folder("INBOX")
        client.copy([decode_id(i).uid for i in ids], account.mailbox(destination))
    finally:
        client.logout()


@pytest.mark.matrix
@pytest.mark.parametrize("without_move", [False, True], ids=["move", "copy-expunge"])
async def test_a_move_never_duplicates_what_the_destination_holds(account: Account, without_move: bool) -> None:
    """Moving three messages into Archive, which holds two of them already (same Message-ID, copied by another
    client, as a Gmail-like layout shows one message in several mailboxes): the third is moved, the two are
    neither moved nor copied and stay in INBOX (`already_present`), and Archive holds each Message-ID once; the
    answer says so. Mailutils, with neither MOVE nor UIDPLUS, refuses the move, changing
    nothing."""
    ids = message_ids(account, "INBOX")[:3]
    copied_directly(account, ids[:2], "Archive")
    archived = message_id_census(account, "Archive")
    person = Person()
    pool = pool_without(account, ("MOVE",)) if without_move else None
    async with served(account, pool=pool, mode="legacy", elicitation_callback=person) as client:
        result = await client.call_tool("move_messages", account.on_server({"ids": ids, "destination": "Archive"}))
    if account.server_name == "mailutils":
        assert "neither MOVE nor UIDPLUS" in error_text(result)
        assert message_id_census(account, "Archive") == archived
        return
    content = result.structured_content
    assert content["status"] == "done" and content["count"] == 1 and content["ids"] == ids[2:]
    assert content["already_present_ids"] == ids[:2] and content["already_present_count"] == 2
    assert isinstance(result.content[0], TextContent)
    assert "were not moved: they are still in" in result.content[0].text
    assert len(person.shown) == 1  # asked about all three: the question stays the same whatever a replay finds
    assert message_ids(account, "INBOX")[:2] == ids[:2]
    census = message_id_census(account, "Archive")
    assert len(census) == len(set(census)) == len(archived) + 1


@pytest.mark.matrix
async def test_a_move_whose_messages_are_all_in_the_destination_asks_no_one(account: Account) -> None:
    """Every message already in the destination: nothing to move, nobody asked, nothing changed."""
    ids = message_ids(account, "INBOX")[:2]
    copied_directly(account, ids, "Archive")
    archived = message_id_census(account, "Archive")
    person = Person()
    async with served(account, mode="2026-07-28", elicitation_callback=person) as client:
        result = await client.call_tool("move_messages", account.on_server({"ids": ids, "destination": "Archive"}))
    if account.server_name == "mailutils":
        assert "neither MOVE nor UIDPLUS" in error_text(result)
    else:
        content = result.structured_content
        assert content["status"] == "nothing_to_do" and content["already_present_ids"] == ids
        assert isinstance(result.content[0], TextContent)
        assert "Nobody was asked" in result.content[0].text and person.shown == []
    assert message_ids(account, "INBOX")[:2] == ids
    assert message_id_census(account, "Archive") == archived


@pytest.mark.matrix
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_copy_whose_messages_are_all_in_the_destination_is_answered_without_a_question(
    account: Account, mode: str
) -> None:
    ids = message_ids(account, "INBOX")[:2]
    args = account.on_server({"ids": ids, "destination": "Archive", "mode": "copy"})
    first, again = Person(), Person()
    async with served(account, mode=mode, elicitation_callback=first) as client:
        assert (await client.call_tool("move_messages", args)).structured_content["count"] == 2
    archived = message_ids(account, "Archive")
    async with served(account, mode=mode, elicitation_callback=again) as client:
        repeated = await client.call_tool("move_messages", args)
    async with served(account, mode=mode) as client:  # no dialog possible: still no confirm_token to ask for
        without_dialog = await client.call_tool("move_messages", args)
    assert len(first.shown) == 1 and again.shown == []
    for result in (repeated, without_dialog):
        content = result.structured_content
        assert not result.is_error and content["status"] == "nothing_to_do"
        assert content["already_present_ids"] == ids and content["confirm_token"] is None
        assert isinstance(result.content[0], TextContent)
        assert "Nobody was asked" in result.content[0].text
    assert message_ids(account, "Archive") == archived
