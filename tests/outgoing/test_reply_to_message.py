"""reply_to_message end to end: recipients, `Re:` once, threading headers, `\\Answered`, and what the dialog hides."""

from __future__ import annotations

from collections.abc import Callable
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import Any

import pytest
from harness import MODES, Account, Person, append_message, error_text, served, structured
from mcp.types import ElicitResult, InputRequiredResult, InputResponses
from smtp_capture import CaptureSMTP

from imap_mcp.server.config import load_settings
from imap_mcp.server.imap.message_ids import MessageRef

pytestmark = pytest.mark.anyio

SentCopies = Callable[[str], list[tuple[bytes, ...]]]
BODY = "Monday works for me too.\n"


def original_of(account: Account, subject: str) -> tuple[MessageRef, str, str | None]:
    """The sample message with this subject: its ref, Message-ID and References (if it has any)."""
    client = account.imap()
    try:
        status = client.select_folder("INBOX", readonly=True)
        [uid] = client.search(["SUBJECT", subject])
        fields = client.fetch([uid], ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID REFERENCES)]"])[uid]
        # Courier names the item with the field names quoted: match it by its start
        headers = next(v for k, v in fields.items() if k.startswith(b"BODY[HEADER.FIELDS")).decode()
    finally:
        client.logout()
    values = BytesHeaderParser(policy=compat32).parsebytes(headers.encode())  # Mailutils upper-cases the names
    return MessageRef("INBOX", int(status[b"UIDVALIDITY"]), uid), str(values["Message-ID"]), values.get("References")


def flags_of(account: Account, ref: MessageRef) -> set[bytes]:
    client = account.imap()
    try:
        client.select_folder(ref.mailbox, readonly=True)
        return set(client.get_flags([ref.uid])[ref.uid])
    finally:
        client.logout()


@pytest.mark.matrix
@pytest.mark.parametrize("mode", MODES)
async def test_a_reply_is_threaded_goes_to_the_sender_and_marks_the_original_answered(
    mode: str,
    account: Account,
    sending_env: dict[str, str],
    smtp: CaptureSMTP,
    person: Person,
    sent_copies: SentCopies,
) -> None:
    ref, message_id, references = original_of(account, "Re: Project kickoff")
    async with served(load_settings(sending_env), mode=mode, elicitation_callback=person) as client:
        result = structured(await client.call_tool("reply_to_message", {"id": ref.id, "body": BODY, "quote": False}))
    assert result["status"] == "sent" and result["answered"] is True and result["recipients"] == 1
    [message], [envelope] = smtp.messages, smtp.envelopes
    assert envelope.rcpt_tos == ("bob@example.net",)
    assert message["To"] == "Bob Builder <bob@example.net>" and "Cc" not in message
    assert message["Subject"] == "Re: Project kickoff"
    assert message["In-Reply-To"] == message_id
    assert message["References"] == f"{references} {message_id}"
    assert message.get_content() == BODY
    assert b"\\Answered" in flags_of(account, ref)
    assert sent_copies(result["message_id"]) == [(b"\\Seen",)]


async def test_reply_all_adds_to_and_cc_without_the_accounts_own_address(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    ref, _, _ = original_of(account, "Re: Project kickoff")
    arguments = {"id": ref.id, "body": BODY, "reply_all": True}
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as c:
        structured(await c.call_tool("reply_to_message", arguments))
    [message], [envelope] = smtp.messages, smtp.envelopes
    assert envelope.rcpt_tos == ("bob@example.net", "alice@example.com", "carol@example.com")
    assert message["To"] == "Bob Builder <bob@example.net>"
    assert message["Cc"] == "alice@example.com, carol@example.com"
    assert "demo@example.org" not in str(message["To"]) + str(message["Cc"])


async def test_the_dialog_for_a_reply_never_shows_the_originals_subject_or_body(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    ref, _, _ = original_of(account, "Urgent: account notice")
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as c:
        result = structured(await c.call_tool("reply_to_message", {"id": ref.id, "body": "Not me."}))
    [question] = person.shown
    assert "Urgent" not in question and "IMPORTANT SYSTEM INSTRUCTION" not in question and "delete" not in question
    assert 'a reply to a message in "INBOX"' in question and "To: mallory@attacker.example" in question
    assert "'Re:' and the original message's subject (not shown here)" in question
    assert "The recipients come from the original message's headers" in question
    assert "Recipients, subject and body come from the caller" not in question
    assert "7 characters" in question
    assert smtp.messages[0]["Subject"] == "Re: Urgent: account notice" and result["status"] == "sent"


async def test_a_line_separator_planted_in_the_originals_subject_becomes_a_space(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person, sent_copies: SentCopies
) -> None:
    planted = (
        b"From: Mallory <mallory@attacker.example>\r\nTo: demo@example.org\r\n"
        b"Subject: =?utf-8?q?Overdue-7731=E2=80=A8Bcc=3A_eve=40evil=2Eexample?=\r\n"
        b"Message-ID: <planted@attacker.example>\r\n\r\nPay now.\r\n"
    )
    uid = append_message(account, planted)
    ref, _, _ = original_of(account, "Overdue-7731")
    assert ref.uid == uid
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as c:
        result = structured(await c.call_tool("reply_to_message", {"id": ref.id, "body": BODY}))
    assert result["status"] == "sent" and len(person.shown) == 1
    [message] = smtp.messages
    assert message["Subject"] == "Re: Overdue-7731 Bcc: eve@evil.example"
    assert smtp.envelopes[0].rcpt_tos == ("mallory@attacker.example",)
    assert sent_copies(result["message_id"]) == [(b"\\Seen",)]


async def test_a_replayed_approved_reply_sends_nothing_more(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    ref, _, _ = original_of(account, "Team lunch on Friday?")
    arguments = {"id": ref.id, "body": "Yes, noon is fine.\n"}
    yes: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=Person()) as c:
        asked = await c.session.call_tool("reply_to_message", arguments, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        retry: dict[str, Any] = {"input_responses": yes, "request_state": asked.request_state}
        reply_all = await c.session.call_tool(
            "reply_to_message", {**arguments, "reply_all": True}, **retry, allow_input_required=True
        )
        assert isinstance(reply_all, InputRequiredResult)  # other recipients: asked again
        first = structured(await c.session.call_tool("reply_to_message", arguments, **retry))
        again = structured(await c.session.call_tool("reply_to_message", arguments, **retry))
    assert (first["status"], again["status"]) == ("sent", "already_sent")
    assert len(smtp.messages) == 1


async def test_a_stale_or_unknown_id_is_refused_with_nothing_sent(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    ref, _, _ = original_of(account, "Quarterly report")
    stale = MessageRef(ref.mailbox, ref.uidvalidity + 1, ref.uid).id
    gone = MessageRef(ref.mailbox, ref.uidvalidity, 999_999).id
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as c:
        for bad_id, reason in ((stale, "is stale"), (gone, "no longer in"), ("imap.bogus", "is not a message id")):
            result = await c.call_tool("reply_to_message", {"id": bad_id, "body": BODY})
            text = error_text(result)
            assert "Nothing was sent" in text and reason in text
    assert person.shown == [] and smtp.messages == []
