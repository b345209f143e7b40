"""What a send's dialog tells a person beyond the message: each recipient, marked new where no message in Sent was
ever addressed to it, and an identical message sent in the last hour (from the approval ledger)."""

from __future__ import annotations

import uuid
from email.message import EmailMessage
from typing import Any

import pytest
from harness import Account, Person, append_message, served, structured
from smtp_capture import CaptureSMTP

from imap_mcp.server.config import load_settings
from imap_mcp.server.outgoing.known import CHECKED_MAX

pytestmark = pytest.mark.anyio

NEW_MARK = ": new (no message in Sent was ever addressed to it)"


def _sent_to(account: Account, address: str) -> None:
    """A message in Sent addressed to `address`, as a mail client would have filed it."""
    message = EmailMessage()
    message["From"] = "demo@example.org"
    message["To"] = f"Someone <{address}>"
    message["Subject"] = "earlier"
    message.set_content("earlier\n")
    append_message(account, message.as_bytes(), mailbox="Sent", flags=(b"\\Seen",))


def _message(*to: str) -> dict[str, Any]:
    return {"to": list(to), "subject": "Hello", "body": "Hi\n"}


@pytest.mark.matrix
async def test_a_send_to_one_known_and_one_new_recipient_marks_the_new_one(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    tag = uuid.uuid4().hex[:8]
    known, new, inside = f"bob-{tag}@example.com", f"carol-{tag}@example.com", f"ob-{tag}@example.com"
    _sent_to(account, known)
    person = Person()
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        result = structured(await client.call_tool("send_message", _message(known, new, inside)))
    assert result["status"] == "sent"
    [question] = person.shown
    assert f'Each recipient, as the Sent mailbox "{account.mailbox("Sent")}" knows it:' in question
    assert f"- {known}: written to before" in question
    assert f"- {new}{NEW_MARK}" in question
    # SEARCH TO matches substrings: "ob-…@example.com" is inside "bob-…@example.com", but no header names it
    assert f"- {inside}{NEW_MARK}" in question
    assert "An identical message" not in question


async def test_past_the_bound_a_recipient_is_not_checked(sending_env: dict[str, str], smtp: CaptureSMTP) -> None:
    many = [f"r{n}-{uuid.uuid4().hex[:6]}@example.com" for n in range(CHECKED_MAX + 1)]
    person = Person(action="decline")
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        await client.call_tool("send_message", _message(*many))
    assert f"- {many[-1]}: not checked (only the first {CHECKED_MAX} recipients are looked up)" in person.shown[0]
    assert f"- {many[0]}{NEW_MARK}" in person.shown[0]


async def test_an_identical_message_sent_after_a_yes_is_named_in_the_next_dialog(
    sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    message = _message(f"dave-{uuid.uuid4().hex[:8]}@example.com")
    person = Person()
    # pushed dialogs: each yes is a new approval (two 2026-07-28 dialogs of one question sealed in the same second
    # share their approval's identity, so the second would be a replay of the first)
    async with served(load_settings(sending_env), mode="legacy", elicitation_callback=person) as client:
        first = structured(await client.call_tool("send_message", message))
        second = structured(await client.call_tool("send_message", message))
        other = structured(await client.call_tool("send_message", {**message, "body": "Something else\n"}))
    assert (first["status"], second["status"], other["status"]) == ("sent", "sent", "sent")
    assert "An identical message" not in person.shown[0]
    assert "An identical message to the same recipients was sent at " in person.shown[1]
    assert "after a yes: approving sends another copy." in person.shown[1]
    assert "written to before" in person.shown[1]  # the first copy is in Sent now
    assert "An identical message" not in person.shown[2]
    assert len(smtp.messages) == 3


async def test_the_token_path_says_it_too(sending_env: dict[str, str], smtp: CaptureSMTP) -> None:
    message = _message(f"erin-{uuid.uuid4().hex[:8]}@example.com")
    async with served(load_settings(sending_env), mode="2026-07-28") as client:
        pending = structured(await client.call_tool("send_message", message))
        structured(await client.call_tool("send_message", {**message, "confirm_token": pending["confirm_token"]}))
        again = await client.call_tool("send_message", message)
    text = again.content[0].text  # type: ignore[union-attr]
    assert "An identical message to the same recipients was sent at " in text and "after a confirm_token" in text
