"""Every tool that takes `id`/`ids` also takes the deprecated `mailbox` + `uid`/`uids`."""

from __future__ import annotations

import pytest
from harness import Account, Person, error_text, served, structured
from smtp_capture import CaptureSMTP

from imap_mcp.server.config import load_settings

pytestmark = pytest.mark.anyio


def uid_of(account: Account, subject: str, mailbox: str = "INBOX") -> int:
    client = account.imap()
    try:
        client.select_folder(mailbox, readonly=True)
        [uid] = client.search(["SUBJECT", subject])
        return int(uid)
    finally:
        client.logout()


def flags(account: Account, uid: int, mailbox: str = "INBOX") -> set[bytes]:
    client = account.imap()
    try:
        client.select_folder(mailbox, readonly=True)
        return set(client.get_flags([uid]).get(uid, ()))
    finally:
        client.logout()


async def test_set_message_flags_by_mailbox_and_uids(account: Account) -> None:
    uid = uid_of(account, "Quarterly report")
    async with served(account) as client:
        result = structured(
            await client.call_tool("set_message_flags", {"mailbox": "INBOX", "uids": [uid], "add": ["\\Flagged"]})
        )
    assert len(result["ids"]) == 1
    assert b"\\Flagged" in flags(account, uid)


@pytest.mark.servers("dovecot", "cyrus", "courier", reason="moves need MOVE or UIDPLUS (Mailutils: test_move_messages)")
async def test_delete_and_move_by_mailbox_and_uids(account: Account, person: Person) -> None:
    lunch, deals = uid_of(account, "Team lunch on Friday?"), uid_of(account, "Your weekly deals")
    async with served(account, mode="2026-07-28", elicitation_callback=person) as client:
        deleted = structured(await client.call_tool("delete_messages", {"mailbox": "INBOX", "uids": [lunch]}))
        moved = structured(
            await client.call_tool(
                "move_messages", {"mailbox": "INBOX", "uids": [deals], "destination": account.mailbox("Archive")}
            )
        )
    assert deleted["status"] == "done" and deleted["count"] == 1
    assert moved["status"] == "done" and len(moved["new_ids"]) == 1
    assert flags(account, lunch) == set() and flags(account, deals) == set()  # both gone from INBOX
    assert len(person.shown) == 2  # each was asked


async def test_uid_ranges_and_mixed_forms_are_refused(account: Account) -> None:
    async with served(account) as client:
        ranged = await client.call_tool("set_message_flags", {"mailbox": "INBOX", "uids": ["1:*"], "add": ["\\Seen"]})
        mixed = await client.call_tool(
            "set_message_flags", {"ids": ["imap.SU5CT1g.1.1"], "mailbox": "INBOX", "uids": [1], "add": ["\\Seen"]}
        )
        neither = await client.call_tool("delete_messages", {})
    assert "Argument 'uids[0]' was given \"1:*\"; accepted: a whole number" in error_text(ranged)
    assert "not both" in error_text(mixed)
    assert "message id" in error_text(neither)


async def test_reply_by_mailbox_and_uid(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    uid = uid_of(account, "Re: Project kickoff")
    async with served(load_settings(sending_env), elicitation_callback=person) as client:
        result = structured(
            await client.call_tool("reply_to_message", {"mailbox": "INBOX", "uid": uid, "body": "Works for me.\n"})
        )
    assert result["status"] == "sent"
    assert smtp.envelopes[0].rcpt_tos == ("bob@example.net",)
    assert b"\\Answered" in flags(account, uid)


async def test_get_thread_by_mailbox_and_uid_reads_the_conversation_the_id_reads(account: Account) -> None:
    uid = uid_of(account, "Re: Project kickoff")
    async with served(account) as client:
        by_uid = structured(await client.call_tool("get_thread", {"mailbox": "INBOX", "uid": uid}))
        by_id = structured(await client.call_tool("get_thread", {"id": by_uid["messages"][-1]["id"]}))
    assert by_uid["total"] > 1 and by_uid["messages"] == by_id["messages"]


async def test_forward_and_send_draft_by_mailbox_and_uid(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    original, draft = uid_of(account, "Quarterly report"), uid_of(account, "Draft: notes for Friday", "Drafts")
    async with served(load_settings(sending_env), elicitation_callback=person) as client:
        forward = {"mailbox": "INBOX", "uid": original, "to": ["carol@example.org"]}
        forwarded = structured(await client.call_tool("forward_message", forward))
        sent = structured(await client.call_tool("send_draft", {"mailbox": "Drafts", "uid": draft}))
    assert forwarded["status"] == sent["status"] == "sent" and len(person.shown) == 2
    assert [envelope.rcpt_tos for envelope in smtp.envelopes] == [("carol@example.org",), ("bob@example.net",)]


def test_every_tool_that_takes_an_id_takes_mailbox_and_uid_as_the_registry_says() -> None:
    """The registry decides how each tool names messages, and registration holds every tool to it: so no tool
    can take `id` without the deprecated `mailbox` + `uid` (nor `ids` without `mailbox` + `uids`)."""
    from imap_mcp.server.tools.registry import BY_NAME, check_message_arguments

    def thread_without_the_deprecated_form(id: str) -> None: ...

    with pytest.raises(ValueError, match="must take"):
        check_message_arguments(BY_NAME["get_thread"], thread_without_the_deprecated_form)
    with pytest.raises(ValueError, match="must take"):
        check_message_arguments(BY_NAME["get_server_info"], thread_without_the_deprecated_form)


async def test_the_listed_schemas_take_mailbox_and_uid_wherever_they_take_an_id(
    account: Account, sending_env: dict[str, str]
) -> None:
    from imap_mcp.server.tools.registry import BY_NAME, MESSAGE_ARGUMENTS

    async with served(load_settings(sending_env)) as client:
        listed = {tool.name: set(tool.input_schema["properties"]) for tool in (await client.list_tools()).tools}
    for name, properties in listed.items():
        form = BY_NAME[name].names_messages
        assert form == next((f for f in ("id", "ids") if f in properties), None), name
        assert form is None or MESSAGE_ARGUMENTS[form] <= properties, name
    assert {"get_thread", "forward_message", "send_draft"} <= {n for n in listed if BY_NAME[n].names_messages}
