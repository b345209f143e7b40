"""Drafts that reply, and sending a saved draft: asked first, bound to the draft as saved, sent once.

save_draft with in_reply_to writes what reply_to_message would send (recipients, `Re:` once, threading
headers), for a person to check; send_draft sends a draft of the Drafts mailbox after a person approved
exactly it: the draft leaves Drafts, its copy is filed in Sent, the original of a reply is marked answered,
and a replay delivers nothing more. Run on every matrix server: drafts are APPENDs and flags the server keeps.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import Account, Person, append_message, dialog_text, error_text, message_ids, served, structured
from mcp import Client
from mcp.types import ElicitResult, InputRequiredResult, InputResponses
from smtp_capture import SENDER, CaptureSMTP
from test_reply_to_message import flags_of, original_of

from imap_mcp.server.config import load_settings
from imap_mcp.server.imap.message_ids import MessageRef, decode_id

pytestmark = [pytest.mark.anyio, pytest.mark.matrix]

YES: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}
BODY = "Monday works for me too.\n"


def drafts(account: Account) -> list[str]:
    return message_ids(account, "Drafts")


def has_uidplus(account: Account) -> bool:
    client = account.imap()
    try:
        return bool(client.has_capability("UIDPLUS"))
    finally:
        client.logout()


async def approved_retry(client: Client, arguments: dict[str, Any]) -> tuple[InputRequiredResult, Any]:
    """Ask about sending a draft, then answer yes once; the question and the retry (to replay)."""
    asked = await client.session.call_tool("send_draft", arguments, allow_input_required=True)
    assert isinstance(asked, InputRequiredResult), asked

    async def retry() -> Any:
        return await client.session.call_tool(
            "send_draft", arguments, input_responses=YES, request_state=asked.request_state
        )

    return asked, retry


async def test_a_reply_draft_is_sent_once_leaves_drafts_is_filed_and_answers_the_original(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    ref, message_id, references = original_of(account, "Re: Project kickoff")
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        saved = structured(
            await client.call_tool("save_draft", {"in_reply_to": ref.id, "body": BODY, "reply_all": True})
        )
        assert saved["id"] in drafts(account) and "\\Draft" in saved["flags"]
        asked, retry = await approved_retry(client, {"id": saved["id"]})
        sent = structured(await retry())
        again = structured(await retry())
    # a server without UIDPLUS cannot expunge exactly one message: the draft stays, and the result says so
    removable = has_uidplus(account)
    assert (sent["status"], sent["answered"], again["status"]) == ("sent", True, "already_sent")
    assert sent["draft_removed"] is removable and (removable or "stays in" in " ".join(sent["problems"]))
    [message] = smtp.messages
    assert message["Subject"] == "Re: Project kickoff" and message["In-Reply-To"] == message_id
    assert message["References"].split()[-1] == message_id and (references or "") in message["References"]
    assert message["From"] == SENDER  # the draft's text as saved: the body, then the original quoted
    assert message.get_content().startswith(f"{BODY}\nOn Tue, 13 Oct 2026 09:00:00 +0000, Bob Builder wrote:\n> ")
    assert "carol@example.com" in message["Cc"] and "demo@example.org" not in (message["To"] + message["Cc"])
    assert (saved["id"] in drafts(account)) is not removable
    assert b"\\Answered" in flags_of(account, ref)
    question = dialog_text(asked)
    assert "Send the draft" in question and "Subject, as the draft says" in question and BODY.strip() not in question


async def test_a_draft_edited_after_the_question_is_asked_about_again(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    """A mail client saves an edited draft as a new message: the old id is gone, the new one is another target."""
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=Person()) as client:
        saved = structured(
            await client.call_tool("save_draft", {"to": ["alice@example.com"], "subject": "Plan", "body": "v1\n"})
        )
        asked, _ = await approved_retry(client, {"id": saved["id"]})
        edited_uid = append_message(
            account,
            b"From: demo@example.org\r\nTo: mallory@attacker.example\r\nSubject: Plan\r\n\r\nv2\r\n",
            "Drafts",
            (b"\\Draft",),
        )
        old = decode_id(saved["id"])
        client_side = account.imap()
        try:
            client_side.select_folder(account.mailbox("Drafts"))
            client_side.add_flags([old.uid], [b"\\Deleted"])
            client_side.expunge()
        finally:
            client_side.logout()
        gone = await client.session.call_tool(
            "send_draft", {"id": saved["id"]}, input_responses=YES, request_state=asked.request_state
        )
        edited = MessageRef(old.mailbox, old.uidvalidity, edited_uid).id
        fresh = await client.session.call_tool(
            "send_draft",
            {"id": edited},
            allow_input_required=True,
            input_responses=YES,
            request_state=asked.request_state,
        )
    assert "no longer in" in error_text(gone) and "Nothing was sent" in error_text(gone)
    assert isinstance(fresh, InputRequiredResult)  # the answer to the old question does not cover it
    assert "mallory@attacker.example" in dialog_text(fresh)
    assert smtp.messages == []


@pytest.mark.dovecot_only(reason="the draft's bytes are judged by imap-mcp, not by the server")
@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"From: mallory@attacker.example\r\nTo: alice@example.com\r\nSubject: x\r\n\r\nx\r\n", "not this account"),
        (b"From: demo@example.org\r\nSubject: x\r\n\r\nx\r\n", "no recipients"),
        (b"From: demo@example.org\r\nTo: alice@example.com, not an address\r\nSubject: x\r\n\r\nx\r\n", "draft"),
    ],
    ids=["someone-elses-from", "no-recipients", "an-address-that-is-not-one"],
)
async def test_a_draft_that_cannot_be_sent_as_saved_is_refused_before_anyone_is_asked(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person, raw: bytes, said: str
) -> None:
    uid = append_message(account, raw, "Drafts", (b"\\Draft",))
    [draft] = [i for i in drafts(account) if decode_id(i).uid == uid]
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        text = error_text(await client.call_tool("send_draft", {"id": draft}))
    assert said in text and text.startswith("Error executing tool send_draft: Nothing was sent")
    assert person.shown == [] and smtp.messages == []


async def test_only_drafts_of_the_drafts_mailbox_are_sent(
    account: Account, sending_env: dict[str, str], person: Person
) -> None:
    inbox = message_ids(account, "INBOX")[0]
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        text = error_text(await client.call_tool("send_draft", {"id": inbox}))
        both = error_text(
            await client.call_tool("save_draft", {"in_reply_to": inbox, "to": ["a@example.org"], "body": "x"})
        )
    assert "sends drafts of the Drafts mailbox" in text and person.shown == []
    assert "leave to, cc and subject out" in both


@pytest.mark.dovecot_only(reason="the approval binds the draft itself; the server plays no part")
async def test_a_confirm_token_for_one_draft_does_not_send_another_of_the_same_to_and_subject(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    """The two-call token path: the first draft's token, sent with another draft's id (another UID, the same To and
    Subject, another body), sends nothing; the first draft's own id still does."""
    plan = {"to": ["alice@example.com"], "subject": "Plan"}
    async with served(load_settings(sending_env), mode="2026-07-28") as client:
        first = structured(await client.call_tool("save_draft", {**plan, "body": "v1\n"}))
        other = structured(await client.call_tool("save_draft", {**plan, "body": "Wire the money today.\n"}))
        pending = structured(await client.call_tool("send_draft", {"id": first["id"]}))
        token = pending["confirm_token"]
        refused = await client.call_tool("send_draft", {"id": other["id"], "confirm_token": token})
        assert smtp.messages == []
        sent = structured(await client.call_tool("send_draft", {"id": first["id"], "confirm_token": token}))
    assert pending["status"] == "confirmation_required" and "does not fit this call" in error_text(refused)
    assert sent["status"] == "sent" and [m.get_content() for m in smtp.messages] == ["v1\n"]


@pytest.mark.dovecot_only(reason="the question is imap-mcp's; the server plays no part")
async def test_the_question_shows_where_answers_to_the_draft_go(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    """A Reply-To is not a recipient, but the answers to the mail go there: the person sees it before approving."""
    raw = (
        b"From: demo@example.org\r\nTo: alice@example.com\r\nReply-To: mallory@attacker.example\r\n"
        b"Subject: Invoice\r\n\r\nPlease answer with the details.\r\n"
    )
    uid = append_message(account, raw, "Drafts", (b"\\Draft",))
    [draft] = [i for i in drafts(account) if decode_id(i).uid == uid]
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked, _ = await approved_retry(client, {"id": draft})
    question = dialog_text(asked)
    assert "Reply-To (answers go there): mallory@attacker.example" in question
    assert smtp.messages == []
