"""The approval binding end to end (2026-07-28 dialogs and two-call tokens), against Dovecot.

Each retry is driven by hand (`allow_input_required=True`) so a test can change the arguments,
the state, the answer, the key ring, the clock or the principal between question and answer.
Whatever does not fit yields a fresh question (dialog) or a clear refusal (token), never a change.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest
from harness import Account, Action, Person, answer, append_message, ask, dialog_text, message_ids, served
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, InputRequiredResult

from imap_mcp.protocol import Guard
from imap_mcp.sealing import KeyRing
from imap_mcp.server.imap.message_ids import MessageRef
from imap_mcp.server.serving.app import build_server

pytestmark = pytest.mark.anyio

KEY_A = "a" * 40
KEY_B = "b" * 40


class Clock:
    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


def server(account: Account, keys: tuple[str, ...] = (KEY_A,), **guard: Any) -> Any:
    settings = account.settings()
    return build_server(settings, guard=Guard(KeyRing(list(keys)), elicitation=True, **guard))


def text(result: CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


async def test_an_approval_for_one_uid_does_not_execute_two(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "delete_messages", {"ids": inbox[:1]})
        again = await answer(client, "delete_messages", {"ids": inbox[:2]}, asked.request_state)
        assert isinstance(again, InputRequiredResult) and "2 messages" in dialog_text(again)
    assert message_ids(account, "INBOX") == inbox


async def test_an_approval_for_archive_does_not_execute_against_public_shared(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    to_archive = {"ids": inbox[:1], "destination": "Archive"}
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "move_messages", to_archive)
        again = await answer(
            client, "move_messages", {**to_archive, "destination": "Public/Shared"}, asked.request_state
        )
        assert isinstance(again, InputRequiredResult) and '"Public/Shared"' in dialog_text(again)
        assert message_ids(account, "Public/Shared") == []
        done = await answer(client, "move_messages", to_archive, asked.request_state)
    assert isinstance(done, CallToolResult) and done.structured_content["status"] == "done"


async def test_an_approval_to_copy_does_not_execute_a_move(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    copy = {"ids": inbox[:1], "destination": "Archive", "mode": "copy"}
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "move_messages", copy)
        again = await answer(client, "move_messages", {**copy, "mode": "move"}, asked.request_state)
    assert isinstance(again, InputRequiredResult) and dialog_text(again).startswith("Move 1 message")
    assert message_ids(account, "INBOX") == inbox


async def test_an_approval_to_trash_does_not_execute_a_permanent_delete(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "delete_messages", {"ids": inbox[:1]})
        again = await answer(client, "delete_messages", {"ids": inbox[:1], "permanent": True}, asked.request_state)
    assert isinstance(again, InputRequiredResult) and "cannot be undone" in dialog_text(again)
    assert message_ids(account, "INBOX") == inbox


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda state: state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB"), id="tampered bytes"),
        pytest.param(lambda state: "v1." + "A" * 120, id="garbage"),
        pytest.param(lambda state: None, id="cold accept, no state"),
    ],
)
async def test_a_forged_accept_gets_a_fresh_question_not_an_error(account: Account, forge: Any) -> None:
    inbox = message_ids(account, "INBOX")
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "delete_messages", {"ids": inbox[:1], "permanent": True})
        again = await answer(
            client, "delete_messages", {"ids": inbox[:1], "permanent": True}, forge(asked.request_state)
        )
    assert isinstance(again, InputRequiredResult)
    assert message_ids(account, "INBOX") == inbox


async def test_a_state_from_another_key_ring_asks_again_and_a_rotated_ring_runs(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    args = {"ids": inbox[:1], "destination": "Archive"}
    async with Client(server(account, (KEY_A,)), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "move_messages", args)
    async with Client(server(account, (KEY_B,)), mode="2026-07-28", elicitation_callback=Person()) as elsewhere:
        assert isinstance(await answer(elsewhere, "move_messages", args, asked.request_state), InputRequiredResult)
    async with Client(server(account, (KEY_B, KEY_A)), mode="2026-07-28", elicitation_callback=Person()) as rotated:
        done = await answer(rotated, "move_messages", args, asked.request_state)
    assert isinstance(done, CallToolResult) and done.structured_content["approved_by"] == "dialog"
    assert len(message_ids(account, "Archive")) == 2


async def test_an_approval_given_before_the_destination_was_recreated_asks_again(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    args = {"ids": inbox[:1], "destination": "Projects/Entwürfe"}
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "move_messages", args)
        direct = account.imap()
        direct.delete_folder("Projects/Entwürfe")
        direct.create_folder("Projects/Entwürfe")
        direct.logout()
        again = await answer(client, "move_messages", args, asked.request_state)
    assert isinstance(again, InputRequiredResult)
    assert message_ids(account, "INBOX") == inbox


async def test_an_expired_approval_asks_again(account: Account) -> None:
    clock = Clock()
    inbox = message_ids(account, "INBOX")
    args = {"ids": inbox[:1]}
    async with Client(server(account, clock=clock), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "delete_messages", args)
        clock.now += 601
        again = await answer(client, "delete_messages", args, asked.request_state)
    assert isinstance(again, InputRequiredResult)
    assert message_ids(account, "INBOX") == inbox


async def test_an_approval_binds_the_principal(account: Account) -> None:
    who = {"name": "alice"}
    inbox = message_ids(account, "INBOX")
    args = {"ids": inbox[:1]}
    mcp = server(account, principal=lambda request_context: who["name"])
    async with Client(mcp, mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "delete_messages", args)
        who["name"] = "bob"
        assert isinstance(await answer(client, "delete_messages", args, asked.request_state), InputRequiredResult)
        who["name"] = "alice"
        done = await answer(client, "delete_messages", args, asked.request_state)
    assert isinstance(done, CallToolResult) and done.structured_content["status"] == "done"


@pytest.mark.parametrize(
    ("action", "ticked", "said"),
    [("decline", True, "declined"), ("cancel", True, "closed the dialog"), ("accept", False, "without ticking")],
)
async def test_no_means_nothing_happens(account: Account, action: Action, ticked: bool, said: str) -> None:
    inbox = message_ids(account, "INBOX")
    args = {"ids": inbox[:2], "permanent": True}
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "delete_messages", args)
        result = await answer(client, "delete_messages", args, asked.request_state, action, ticked)
    assert isinstance(result, CallToolResult) and result.is_error and said in text(result)
    assert message_ids(account, "INBOX") == inbox


async def test_a_non_guarded_tool_still_refuses_a_tampered_state_with_32602(account: Account) -> None:
    settings = dataclasses.replace(account.settings(), spec_fixtures=True)
    async with served(settings, mode="2026-07-28", elicitation_callback=Person()) as client:
        tool = "test_input_required_result_tampered_state"
        first = await client.session.call_tool(tool, {}, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and first.request_state
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(tool, {}, allow_input_required=True, request_state=first.request_state + "x")
    assert refused.value.error.code == -32602


async def test_a_change_that_runs_is_logged_in_one_line_without_subjects(
    account: Account, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = message_ids(account, "INBOX")
    caplog.set_level(logging.INFO, logger="imap_mcp")
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        await client.call_tool("move_messages", {"ids": inbox[:3], "destination": "Archive"})
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("change:")]
    assert lines == ["change: move mailbox='INBOX' destination='Archive' uids=1:3 count=3 approved_by=dialog"]


# --- the two-call token ---


async def token_for(client: Client, tool: str, args: dict[str, Any]) -> str:
    first = await client.call_tool(tool, args)
    assert not first.is_error and first.structured_content["status"] == "confirmation_required"
    token: str = first.structured_content["confirm_token"]
    return token


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda ids: {"ids": ids[:2]}, id="widened"),
        pytest.param(lambda ids: {"ids": ids[1:2]}, id="swapped"),
        pytest.param(lambda ids: {"ids": ids[:1], "permanent": True}, id="trash to permanent"),
    ],
)
async def test_a_token_for_other_arguments_is_refused(account: Account, change: Any) -> None:
    inbox = message_ids(account, "INBOX")
    async with Client(server(account), mode="2026-07-28") as client:
        token = await token_for(client, "delete_messages", {"ids": inbox[:1]})
        refused = await client.call_tool("delete_messages", {**change(inbox), "confirm_token": token})
    assert refused.is_error and "does not fit" in text(refused) and "without confirm_token" in text(refused)
    assert message_ids(account, "INBOX") == inbox


async def test_a_tampered_or_expired_token_is_refused(account: Account) -> None:
    clock = Clock()
    inbox = message_ids(account, "INBOX")
    args = {"ids": inbox[:1], "destination": "Archive", "mode": "copy"}
    async with Client(server(account, clock=clock), mode="legacy") as client:
        token = await token_for(client, "move_messages", args)
        tampered = await client.call_tool("move_messages", {**args, "confirm_token": token[:-2] + "xx"})
        clock.now += 301
        expired = await client.call_tool("move_messages", {**args, "confirm_token": token})
    for refused in (tampered, expired):
        assert refused.is_error and "does not fit" in text(refused), text(refused)
        assert "Call move_messages again without confirm_token to get a new one" in text(refused)
    assert len(message_ids(account, "Archive")) == 1


async def test_a_token_works_on_another_replica_and_replaying_it_is_harmless(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    args = {"ids": inbox[:2], "permanent": True}
    async with Client(server(account, (KEY_A,)), mode="2026-07-28") as client:
        token = await token_for(client, "delete_messages", args)
    async with Client(server(account, (KEY_B, KEY_A)), mode="2026-07-28") as replica:
        done = await replica.call_tool("delete_messages", {**args, "confirm_token": token})
        replay = await replica.call_tool("delete_messages", {**args, "confirm_token": token})
    assert done.structured_content["count"] == 2 and done.structured_content["approved_by"] == "token"
    assert replay.is_error and "None of these messages exist" in text(replay) and "search again" in text(replay)
    assert message_ids(account, "INBOX") == inbox[2:]


async def test_the_token_text_says_what_it_proves_and_that_this_server_did_not_ask(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    async with Client(server(account), mode="2026-07-28") as client:
        first = await client.call_tool("delete_messages", {"ids": inbox[:1]})
    token = first.structured_content["confirm_token"]
    assert token in text(first)
    assert "proves only that the call was made twice with the same arguments" in text(first)
    assert "imap-mcp had no way to show a person" in text(first)


# --- UIDs that do not exist (yet) are never part of what a person approves ---


def future_ids(account: Account, count: int = 2) -> list[str]:
    """Ids for the next `count` UIDs INBOX will give out (UIDNEXT, UIDNEXT+1, …): no message has them yet."""
    direct = account.imap()
    try:
        status = direct.folder_status("INBOX", [b"UIDVALIDITY", b"UIDNEXT"])
    finally:
        direct.logout()
    uidnext = int(status[b"UIDNEXT"])
    return [MessageRef("INBOX", int(status[b"UIDVALIDITY"]), uidnext + n).id for n in range(count)]


def new_mail(account: Account, count: int = 2) -> list[str]:
    """Deliver `count` new messages to INBOX; their ids."""
    uids = [
        append_message(account, f"Subject: new {n}\r\nMessage-ID: <new-{n}@t>\r\n\r\nnew\r\n".encode())
        for n in range(count)
    ]
    return [i for i in message_ids(account, "INBOX") if int(i.split(".")[-1]) in uids]


@pytest.mark.parametrize("person", [Person(), None], ids=["dialog", "token"])
async def test_uids_that_do_not_exist_yet_are_refused_before_anyone_is_asked(
    account: Account, person: Person | None
) -> None:
    inbox = message_ids(account, "INBOX")
    options: dict[str, Any] = {"elicitation_callback": person} if person else {}
    async with Client(server(account), mode="2026-07-28", **options) as client:
        refused = await client.call_tool("delete_messages", {"ids": future_ids(account), "permanent": True})
    assert refused.is_error and "None of these messages exist" in text(refused)
    assert "nobody was asked" in text(refused) and "search again" in text(refused)
    assert refused.structured_content is None or "confirm_token" not in refused.structured_content
    assert person is None or person.shown == []
    assert message_ids(account, "INBOX") == inbox


async def test_a_replayed_approval_never_reaches_mail_that_arrived_later_dialog(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    args: dict[str, Any] = {"ids": [inbox[0], *future_ids(account)], "permanent": True}
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "delete_messages", args)
        shown = dialog_text(asked)
        assert shown.startswith('Permanently delete 1 message from "INBOX"?') and ": 1\n" in shown, shown
        done = await answer(client, "delete_messages", args, asked.request_state)
        assert isinstance(done, CallToolResult) and done.structured_content["ids"] == inbox[:1]
        assert done.structured_content["missing_ids"] == args["ids"][1:]
        arrived = new_mail(account)
        assert arrived == args["ids"][1:]  # the new mail has exactly the UIDs asked about earlier
        replay = await answer(client, "delete_messages", args, asked.request_state)
    assert isinstance(replay, InputRequiredResult)  # a fresh question about the new mail, nothing ran
    assert message_ids(account, "INBOX") == inbox[1:] + arrived


async def test_a_replayed_token_never_reaches_mail_that_arrived_later(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    args: dict[str, Any] = {"ids": [inbox[0], *future_ids(account)], "permanent": True}
    async with Client(server(account), mode="2026-07-28") as client:
        first = await client.call_tool("delete_messages", args)
        assert first.structured_content["ids"] == inbox[:1] and "1 message" in text(first)
        token = first.structured_content["confirm_token"]
        done = await client.call_tool("delete_messages", {**args, "confirm_token": token})
        assert done.structured_content["count"] == 1
        arrived = new_mail(account)
        replay = await client.call_tool("delete_messages", {**args, "confirm_token": token})
    assert arrived == args["ids"][1:]
    assert replay.is_error and "does not fit" in text(replay)
    assert message_ids(account, "INBOX") == inbox[1:] + arrived


# --- a replayed copy copies nothing more ---


async def test_a_replayed_dialog_approval_to_copy_copies_once(account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    args = {"ids": inbox[:2], "destination": "Archive", "mode": "copy"}
    async with Client(server(account), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "move_messages", args)
        done = await answer(client, "move_messages", args, asked.request_state)
        replays = [await answer(client, "move_messages", args, asked.request_state) for _ in range(2)]
    assert isinstance(done, CallToolResult) and done.structured_content["count"] == 2
    for replay in replays:
        assert isinstance(replay, CallToolResult) and not replay.is_error
        content = replay.structured_content
        assert content["status"] == "nothing_to_do" and content["count"] == 0
        assert content["already_present_ids"] == inbox[:2] and content["new_ids"] == []
        assert "2 already had a copy in 'Archive'" in text(replay)
    assert len(message_ids(account, "Archive")) == 3 and message_ids(account, "INBOX") == inbox


async def test_a_replayed_token_to_copy_copies_once_a_message_without_message_id_too(account: Account) -> None:
    """The approval ledger knows the token's copy ran: a replay copies nothing, whatever the messages carry."""
    bare = append_message(account, b"Subject: no id\r\n\r\nno Message-ID here\r\n")
    inbox = message_ids(account, "INBOX")
    with_id, without_id = inbox[0], next(i for i in inbox if i.endswith(f".{bare}"))
    args = {"ids": [with_id, without_id], "destination": "Archive", "mode": "copy"}
    async with Client(server(account), mode="2026-07-28") as client:
        token = await token_for(client, "move_messages", args)
        runs = [await client.call_tool("move_messages", {**args, "confirm_token": token}) for _ in range(3)]
    assert [r.structured_content["count"] for r in runs] == [2, 0, 0]
    assert [r.structured_content["status"] for r in runs] == ["done", "nothing_to_do", "nothing_to_do"]
    assert "already ran" in runs[1].content[0].text  # type: ignore[union-attr]
    assert len(message_ids(account, "Archive")) == 1 + 2


# --- property: an approval never covers anything near its target (the real tools, in-process) ---

WATCHED = ("INBOX", "Archive", "Junk", "Trash", "Projects/Entwürfe")
BASES: dict[str, tuple[str, dict[str, Any]]] = {
    "trash": ("delete_messages", {}),
    "permanent": ("delete_messages", {"permanent": True}),
    "move": ("move_messages", {"destination": "Archive"}),
    "copy": ("move_messages", {"destination": "Archive", "mode": "copy"}),
}
Call = tuple[str, dict[str, Any]]


def perturbed(name: str, call: Call, inbox: list[str], junk: list[str]) -> Call:
    """`call` (on inbox[:2]) changed in one way; each is another target than the one approved."""
    tool, args = call
    if name == "widened":
        return tool, {**args, "ids": inbox[:3]}
    if name == "narrowed":
        return tool, {**args, "ids": inbox[:1]}
    if name == "swapped":
        return tool, {**args, "ids": inbox[2:4]}
    if name == "other source mailbox":
        return tool, {**args, "ids": junk}
    if name == "move<->copy, trash<->permanent":
        if tool == "delete_messages":
            return tool, {**args, "permanent": not args.get("permanent", False)}
        return tool, {**args, "mode": "move" if args.get("mode") == "copy" else "copy"}
    if name == "other destination":
        if tool == "delete_messages":
            return "move_messages", {"ids": args["ids"], "destination": "Trash"}
        return tool, {**args, "destination": "Projects/Entwürfe"}
    assert name == "other tool"
    if tool == "delete_messages":
        return "move_messages", {"ids": args["ids"], "destination": "Archive"}
    return "delete_messages", {"ids": args["ids"]}


PERTURBATIONS = (
    "widened",
    "narrowed",
    "swapped",
    "other source mailbox",
    "move<->copy, trash<->permanent",
    "other destination",
    "other tool",
)


def snapshot(account: Account) -> dict[str, dict[int, tuple[bytes, ...]]]:
    """Every watched mailbox's UIDs and flags, read over a direct IMAP connection."""
    direct = account.imap()
    try:
        seen: dict[str, dict[int, tuple[bytes, ...]]] = {}
        for mailbox in WATCHED:
            direct.select_folder(mailbox, readonly=True)
            uids = direct.search(["ALL"])
            flags = direct.get_flags(uids) if uids else {}
            seen[mailbox] = {uid: tuple(sorted(f for f in flags[uid] if f != b"\\Recent")) for uid in uids}
        return seen
    finally:
        direct.logout()


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(sorted(BASES)), change=st.sampled_from(PERTURBATIONS))
async def test_a_sealed_approval_or_token_for_one_target_never_runs_another(
    account: Account, base: str, change: str
) -> None:
    """The same account serves every example on purpose: nothing may change it, which is what is checked."""
    before = snapshot(account)
    inbox, junk = message_ids(account, "INBOX"), message_ids(account, "Junk")
    tool, extra = BASES[base]
    approved_args = {"ids": inbox[:2], **extra}
    other_tool, other_args = perturbed(change, (tool, approved_args), inbox, junk)
    mcp = server(account)
    async with Client(mcp, mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, tool, approved_args)
        retried = await answer(client, other_tool, other_args, asked.request_state)
    async with Client(mcp, mode="2026-07-28") as without_dialog:
        token = await token_for(without_dialog, tool, approved_args)
        refused = await without_dialog.call_tool(other_tool, {**other_args, "confirm_token": token})
    assert isinstance(retried, InputRequiredResult), retried
    assert refused.is_error and "does not fit" in text(refused), text(refused)
    assert snapshot(account) == before
