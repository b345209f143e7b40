"""manage_mailbox: create runs, rename takes the two-call token, delete asks and binds the mailbox's contents."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Account, Person, dialog_text, guarded_client, mailbox_names
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult, InputResponses

pytestmark = [pytest.mark.anyio, pytest.mark.matrix]


async def test_create_runs_at_once_without_asking(account: Account) -> None:
    person = Person()
    async with guarded_client(account, person) as client:
        args = account.on_server({"action": "create", "mailbox": "Receipts/2026"})
        result = await client.call_tool("manage_mailbox", args)
    assert result.structured_content["approved_by"] == "not needed" and person.shown == []
    assert account.mailbox("Receipts/2026") in mailbox_names(account)


async def test_rename_takes_the_token_even_where_a_dialog_could_be_shown(account: Account) -> None:
    person = Person()
    args = account.on_server({"action": "rename", "mailbox": "Projects/Entwürfe", "new_name": "Projects/Drafts"})
    async with guarded_client(account, person) as client:
        first = await client.call_tool("manage_mailbox", args)
        assert args["mailbox"] in mailbox_names(account)
        token = first.structured_content["confirm_token"]
        done = await client.call_tool("manage_mailbox", {**args, "confirm_token": token})
    assert person.shown == [] and done.structured_content["approved_by"] == "token"
    assert args["new_name"] in mailbox_names(account) and args["mailbox"] not in mailbox_names(account)


async def test_delete_asks_and_then_deletes(account: Account) -> None:
    person = Person()
    async with guarded_client(account, person) as client:
        args = account.on_server({"action": "delete", "mailbox": "Projects/Entwürfe"})
        result = await client.call_tool("manage_mailbox", args)
    assert result.structured_content["approved_by"] == "dialog" and len(person.shown) == 1
    assert account.mailbox("Projects/Entwürfe") not in mailbox_names(account)


async def test_a_parent_mailbox_can_be_deleted_once_its_children_are(account: Account) -> None:
    async with guarded_client(account, Person()) as client:
        for mailbox in ("Projects/Entwürfe", "Projects"):
            result = await client.call_tool(
                "manage_mailbox", account.on_server({"action": "delete", "mailbox": mailbox})
            )
            assert result.structured_content["status"] == "done", result.content
    assert not {account.mailbox("Projects"), account.mailbox("Projects/Entwürfe")} & mailbox_names(account)


async def test_mail_arriving_after_the_question_voids_the_approval(account: Account) -> None:
    args = account.on_server({"action": "delete", "mailbox": "Archive"})
    async with guarded_client(account, Person()) as client:
        asked = await client.session.call_tool("manage_mailbox", args, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        direct = account.imap()
        direct.append(account.mailbox("Archive"), b"Subject: arrived later\r\n\r\nhello\r\n")
        direct.logout()
        yes: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}
        again = await client.session.call_tool(
            "manage_mailbox", args, allow_input_required=True, input_responses=yes, request_state=asked.request_state
        )
    assert isinstance(again, InputRequiredResult) and "the 2 messages in it" in dialog_text(again)
    assert account.mailbox("Archive") in mailbox_names(account)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"action": "delete", "mailbox": "INBOX"}, "INBOX cannot be deleted"),
        ({"action": "delete", "mailbox": "Nowhere"}, "does not exist"),
        (
            {"action": "delete", "mailbox": "Projects"},
            "has 1 child mailbox(es) ('{Projects/Entwürfe}'); the IMAP server would keep '{Projects}' as their parent",
        ),
        ({"action": "rename", "mailbox": "Archive", "new_name": "Junk"}, "already exists"),
        ({"action": "rename", "mailbox": "Archive"}, "needs new_name"),
        ({"action": "create", "mailbox": "Archive"}, "already exists"),
    ],
)
async def test_impossible_requests_are_refused_before_anyone_is_asked(
    account: Account, args: dict[str, Any], said: str
) -> None:
    person = Person()
    said = said.replace("{Projects/Entwürfe}", account.mailbox("Projects/Entwürfe"))
    said = said.replace("{Projects}", account.mailbox("Projects"))
    async with guarded_client(account, person) as client:
        result: CallToolResult = await client.call_tool("manage_mailbox", account.on_server(args))
    assert result.is_error and said in result.content[0].text and person.shown == []  # type: ignore[union-attr]
    assert mailbox_names(account) >= {account.mailbox(name) for name in ("Archive", "Projects", "Projects/Entwürfe")}
