"""delete_messages against Dovecot: trash vs permanent, exact expunges, refusals, and what dialogs show."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest
from harness import Account, Person, answer, ask, error_text, message_ids, pool_without, served, structured
from mcp.types import CallToolResult, TextContent

from imap_mcp.server.demo.sample_mail import sample_messages
from imap_mcp.server.tools.results import LISTED_IDS_MAX

pytestmark = pytest.mark.anyio
#: moves and deletes of messages need MOVE or UIDPLUS, which Mailutils lacks: there they are refused
#: (test_move_messages.py::test_on_a_server_with_neither_move_nor_uidplus_moves_and_deletes_are_refused)
MOVING = pytest.mark.servers("dovecot", "cyrus", "courier", reason="Mailutils has neither MOVE nor UIDPLUS")


def words_of_inbox_mail() -> set[str]:
    """Distinctive subject and body words of the sample INBOX messages (none may reach a dialog)."""
    words: set[str] = set()
    for item in sample_messages():
        if item.mailbox == "INBOX":
            words.add(str(item.message["Subject"]))
            body = item.message.get_body(("plain", "html"))
            words.add(body.get_content().strip().splitlines()[0][:30])  # type: ignore[union-attr]
    return words


async def call(
    account: Account, tool: str, args: dict[str, Any], person: Person | None = None, pool: Any = None
) -> CallToolResult:
    options: dict[str, Any] = {"elicitation_callback": person} if person else {}
    async with served(account, pool=pool, mode="2026-07-28", **options) as client:
        return await client.call_tool(tool, args)


@MOVING
@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        (
            "delete_messages",
            {},
            [
                'Move 3 messages from "INBOX" to the Trash mailbox "Trash"?',
                "new UIDs",
                "caller (the AI assistant's request): the source mailbox and the UIDs.",
                'From the IMAP server: the Trash mailbox "Trash", and that the UIDs exist.',
            ],
        ),
        (
            "delete_messages",
            {"permanent": True},
            [
                'Permanently delete 3 messages from "INBOX"?',
                "cannot be undone",
                "request): the mailbox name and the UIDs. From the IMAP server: that the UIDs exist.",
            ],
        ),
        (
            "move_messages",
            {"destination": "Archive"},
            [
                'Move 3 messages from "INBOX" to "Archive"?',
                "new UIDs",
                "request): the mailbox names and the UIDs. From the IMAP server: that the UIDs exist.",
            ],
        ),
        ("move_messages", {"destination": "Junk", "mode": "copy"}, ['Copy 3 messages from "INBOX" to "Junk"?']),
    ],
)
async def test_the_dialog_shows_counts_uids_and_names_but_no_subject_or_body(
    account: Account, tool: str, args: dict[str, Any], expected: list[str]
) -> None:
    person = Person(action="decline")
    ids = message_ids(account, "INBOX")
    result = await call(account, tool, account.on_server({"ids": ids[:3], **args}), person)
    assert isinstance(result.content[0], TextContent)
    assert result.is_error and "declined" in result.content[0].text
    (shown,) = person.shown
    caller = "Supplied by the caller (the AI assistant's request): the "
    for phrase in [*map(account.quoted, expected), "UIDVALIDITY", ": 1:3", caller, account.username]:
        assert phrase in shown, (phrase, shown)
    for secret in words_of_inbox_mail():
        assert secret not in shown
    assert message_ids(account, "INBOX") == ids


@pytest.mark.matrix
async def test_the_dialog_for_deleting_a_mailbox_shows_its_name_and_message_count(account: Account) -> None:
    person = Person(action="cancel")
    result = await call(
        account, "manage_mailbox", account.on_server({"action": "delete", "mailbox": "Archive"}), person
    )
    assert "closed the dialog without approving" in error_text(result)
    (shown,) = person.shown
    assert account.quoted('Delete the mailbox "Archive" and the 1 message in it?') in shown
    assert "cannot be undone" in shown
    assert "Supplied by the caller (the AI assistant's request): the mailbox name." in shown
    assert "From the IMAP server: the message count." in shown
    assert "Old travel plans" not in shown and "kept for reference" not in shown


async def test_the_dialog_for_deleting_a_mailbox_says_mail_arriving_meanwhile_goes_too(account: Account) -> None:
    """IMAP cannot stop delivery between the last check and DELETE: the person is told, not promised otherwise."""
    person = Person(action="cancel")
    await call(account, "manage_mailbox", {"action": "delete", "mailbox": account.mailbox("Archive")}, person)
    assert "Mail delivered into it while it is being deleted is deleted with it" in person.shown[0]


@MOVING
async def test_trash_delete_moves_to_trash_and_returns_the_new_ids(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    result = await call(account, "delete_messages", {"ids": ids[:2]}, Person())
    content = result.structured_content
    assert content["status"] == "done" and content["destination"] == account.mailbox("Trash")
    assert content["new_ids"] == message_ids(account, "Trash")
    assert message_ids(account, "INBOX") == ids[2:]


@MOVING
async def test_a_permanent_delete_leaves_a_message_another_client_marked_deleted(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    other = account.imap()
    other.select_folder("INBOX")
    other.add_flags([5], [b"\\Deleted"])
    other.logout()
    result = await call(account, "delete_messages", {"ids": ids[:2], "permanent": True}, Person())
    assert result.structured_content["count"] == 2
    assert message_ids(account, "INBOX") == ids[2:]
    assert message_ids(account, "Trash") == []


@MOVING
async def test_a_trash_delete_without_move_copies_then_expunges_exactly_those_uids(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    other = account.imap()
    other.select_folder("INBOX")
    other.add_flags([6], [b"\\Deleted"])
    other.logout()
    result = await call(account, "delete_messages", {"ids": ids[:2]}, Person(), pool_without(account, ("MOVE",)))
    content = result.structured_content
    assert content["status"] == "done" and content["count"] == 2
    assert content["new_ids"] == message_ids(account, "Trash")
    assert len(content["new_ids"]) == 2
    assert message_ids(account, "INBOX") == ids[2:]  # UID 6, marked \Deleted by another client, stays


async def test_a_permanent_delete_without_uidplus_is_refused(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    pool = pool_without(account, capabilities=("UIDPLUS",))
    result = await call(account, "delete_messages", {"ids": ids[:1], "permanent": True}, Person(), pool)
    assert isinstance(result.content[0], TextContent)
    assert result.is_error and "does not offer UIDPLUS" in result.content[0].text
    assert message_ids(account, "INBOX") == ids


async def test_a_trash_delete_without_a_trash_mailbox_is_refused_not_made_permanent(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    person = Person()
    result = await call(
        account, "delete_messages", {"ids": ids[:1]}, person, pool_without(account, mailboxes=("Trash",))
    )
    assert isinstance(result.content[0], TextContent)
    assert result.is_error and "no Trash mailbox" in result.content[0].text
    assert person.shown == [] and message_ids(account, "INBOX") == ids


@MOVING
async def test_deleting_from_trash_without_permanent_is_refused(account: Account) -> None:
    trashed = await call(account, "delete_messages", {"ids": message_ids(account, "INBOX")[:1]}, Person())
    again = await call(account, "delete_messages", {"ids": trashed.structured_content["new_ids"]}, Person())
    assert isinstance(again.content[0], TextContent)
    assert again.is_error and account.quoted("already in 'Trash'") in again.content[0].text


@pytest.mark.matrix
async def test_a_stale_id_is_refused_before_anyone_is_asked(account: Account) -> None:
    ids = message_ids(account, "Archive")
    archive = account.mailbox("Archive")
    direct = account.imap()
    before = direct.folder_status(archive, [b"UIDVALIDITY"])[b"UIDVALIDITY"]
    while True:  # Courier and Mailutils take UIDVALIDITY from the clock: re-created in the same second, it is the same
        direct.delete_folder(archive)
        direct.create_folder(archive)
        if direct.folder_status(archive, [b"UIDVALIDITY"])[b"UIDVALIDITY"] != before:
            break
        time.sleep(0.5)
    direct.append(archive, b"Subject: new\r\n\r\nnew\r\n")
    direct.logout()
    person = Person()
    result = await call(account, "delete_messages", {"ids": ids, "permanent": True}, person)
    assert isinstance(result.content[0], TextContent)
    assert result.is_error and "stale" in result.content[0].text
    assert person.shown == [] and len(message_ids(account, "Archive")) == 1


async def test_ids_of_two_mailboxes_are_refused(account: Account) -> None:
    ids = message_ids(account, "INBOX")[:1] + message_ids(account, "Archive")
    result = await call(account, "delete_messages", {"ids": ids}, Person())
    assert isinstance(result.content[0], TextContent)
    assert result.is_error and "more than one mailbox" in result.content[0].text


@MOVING
async def test_fifty_thousand_ids_of_which_two_exist_ask_about_two_and_report_the_rest_missing(
    account: Account,
) -> None:
    from imap_mcp.server.imap.message_ids import MessageRef, decode_id

    existing = message_ids(account, "INBOX")[:2]
    uidvalidity = decode_id(existing[0]).uidvalidity
    unknown = [MessageRef("INBOX", uidvalidity, uid).id for uid in range(1_000, 50_998)]
    person = Person()
    result = await call(account, "delete_messages", {"ids": unknown + existing, "permanent": True}, person)
    content = result.structured_content
    assert len(person.shown) == 1 and "Permanently delete 2 messages" in person.shown[0]
    assert content["count"] == 2 and content["ids"] == existing
    # bounded for a model: the first ids, the exact count, and the rest as UID ranges
    assert content["missing_ids"] == unknown[:LISTED_IDS_MAX] and content["missing_count"] == len(unknown)
    assert "at the UIDs 1000:50997:" in content["rest"]
    assert isinstance(result.content[0], TextContent)
    assert len(result.content[0].text) + len(json.dumps(content)) < 20_000


@MOVING
async def test_the_token_answers_to_fifty_thousand_ids_are_bounded_too(account: Account) -> None:
    from imap_mcp.server.imap.message_ids import MessageRef, decode_id

    existing = message_ids(account, "INBOX")[:2]
    unknown = [MessageRef("INBOX", decode_id(existing[0]).uidvalidity, uid).id for uid in range(1_000, 50_998)]
    args = {"ids": unknown + existing, "permanent": True}
    async with served(account, mode="2026-07-28") as client:  # no dialog: the two-call token
        first = await client.call_tool("delete_messages", args)
        token = structured(first)["confirm_token"]
        second = await client.call_tool("delete_messages", {**args, "confirm_token": token})
    assert structured(first)["status"] == "confirmation_required" and structured(second)["count"] == 2
    for result in (first, second):
        content = structured(result)
        assert content["missing_ids"] == unknown[:LISTED_IDS_MAX] and content["missing_count"] == len(unknown)
        assert "at the UIDs 1000:50997:" in content["rest"]
        assert isinstance(result.content[0], TextContent)
        assert len(result.content[0].text) + len(json.dumps(content)) < 20_000
    assert not set(existing) & set(message_ids(account, "INBOX"))


@MOVING
async def test_an_approved_delete_into_a_trash_no_client_has_opened_still_runs_a_second_later(
    account: Account,
) -> None:
    """Courier fixes a mailbox's UIDVALIDITY only at its first read-write SELECT (before that, STATUS answers
    with the current time): the approval pins the Trash, so the server must be made to commit before asking."""
    ids = message_ids(account, "INBOX")[:1]
    async with served(account, mode="2026-07-28", elicitation_callback=Person()) as client:
        question = await ask(client, "delete_messages", {"ids": ids})
        await anyio.sleep(1.1)  # into the next second, when an uncommitted UIDVALIDITY has moved on
        result = await answer(client, "delete_messages", {"ids": ids}, question.request_state)
        await anyio.sleep(1.1)
        assert structured(result)["new_ids"] == message_ids(account, "Trash")


@MOVING
async def test_the_token_preview_counts_the_messages_it_lists(account: Account) -> None:
    """The first answer of the token path lists the ids the change will touch, and counts them (not 0 beside one id)."""
    [target] = message_ids(account, "INBOX")[:1]
    async with served(account, mode="2026-07-28") as client:  # no dialog: the two-call token
        preview = structured(await client.call_tool("delete_messages", {"ids": [target]}))
    assert preview["status"] == "confirmation_required"
    assert preview["ids"] == [target] and preview["count"] == 1
    assert target in message_ids(account, "INBOX")  # the preview changed nothing
