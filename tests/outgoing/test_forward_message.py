"""forward_message end to end: SDK client → imap-mcp → guard → aiosmtpd listener, on each IMAP server of the matrix.

Inline: the note, the original's header lines and text quoted, its attachments byte for byte. Attachment: the
original's every byte inside a message/rfc822 part. Asked first, bound to the original; sent once; $Forwarded as the
server kept it."""

from __future__ import annotations

import hashlib
import os
from email.message import EmailMessage
from typing import Any

import pytest
from harness import Account, Person, answer, append_message, ask, error_text, message_ids, served, structured
from mcp.types import InputRequiredResult
from smtp_capture import CaptureSMTP

from imap_mcp.server.config import load_settings

pytestmark = [pytest.mark.anyio, pytest.mark.matrix]

PHOTO = os.urandom(120_000)
TEXT = "Hi,\n\nthe photos from Zürich.\n.\nA line with only a dot above.\n"


def original(account: Account) -> tuple[str, bytes]:
    """A new INBOX message with a text and `PHOTO`: its id and its bytes as the server keeps them."""
    message = EmailMessage()
    message["From"] = "Zoe <zoe@example.com>"
    message["To"] = "demo@example.org"
    message["Subject"] = "Photos from Zürich"
    message["Date"] = "Mon, 02 Mar 2026 10:00:00 +0000"
    message.set_content(TEXT)
    message.add_attachment(PHOTO, maintype="image", subtype="jpeg", filename="zürich.jpg")
    uid = append_message(account, message.as_bytes(policy=message.policy.clone(linesep="\r\n")))
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        raw = client.fetch([uid], ["BODY.PEEK[]"])[uid][b"BODY[]"]
    finally:
        client.logout()
    return next(i for i in message_ids(account, "INBOX") if i.endswith(f".{uid}")), raw


def flags_of(account: Account, message_id: str) -> set[bytes]:
    uid = int(message_id.rsplit(".", 1)[1])
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        return set(client.fetch([uid], ["FLAGS"])[uid][b"FLAGS"])
    finally:
        client.logout()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_inline_quotes_the_text_and_keeps_the_attachments(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    message_id, _ = original(account)
    arguments = {"id": message_id, "to": ["alice@example.com"], "body": "FYI, see below.\n", "mode": "inline"}
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        result = structured(await client.call_tool("forward_message", arguments))
    assert result["status"] == "sent"
    [message] = smtp.messages
    assert message["Subject"] == "Fwd: Photos from Zürich" and message["To"] == "alice@example.com"
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert text.startswith("FYI, see below.\n\n---------- Forwarded message ----------\nFrom: Zoe <zoe@example.com>\n")
    assert "Subject: Photos from Zürich\n" in text
    assert "> the photos from Zürich.\n> .\n> A line with only a dot above.\n" in text
    [photo] = message.iter_attachments()
    payload = photo.get_payload(decode=True)
    assert isinstance(payload, bytes)
    assert photo.get_filename() == "zürich.jpg" and sha(payload) == sha(PHOTO)
    assert result["forwarded"] == (b"$Forwarded" in flags_of(account, message_id))
    if not result["forwarded"]:
        assert any("$Forwarded" in problem for problem in result["problems"]), result["problems"]
    [question] = person.shown
    assert "Forward the message UID" in question and "its text quoted below the note" in question
    assert f'"zürich.jpg" (image/jpeg, {len(PHOTO)} bytes)' in question
    assert "Photos from" not in question and "FYI" not in question


async def test_attachment_mode_carries_every_byte_of_the_original(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    message_id, raw = original(account)
    arguments = {"id": message_id, "to": ["alice@example.com"], "cc": ["bob@example.net"], "mode": "attachment"}
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        result = structured(await client.call_tool("forward_message", arguments))
    assert result["status"] == "sent" and result["recipients"] == 2
    [message], [received] = smtp.messages, smtp.raw
    [part] = message.iter_attachments()
    assert part.get_content_type() == "message/rfc822"
    assert raw in received  # byte for byte, as the server keeps it (its lone dot line came through DATA too)
    assert f"the whole original attached as it is ({len(raw)} bytes of it)" in person.shown[0]


async def test_a_replay_sends_nothing_more_and_the_approval_is_bound_to_the_original(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    first_id, _ = original(account)
    other_id, _ = original(account)
    arguments: dict[str, Any] = {"id": first_id, "to": ["alice@example.com"], "mode": "attachment"}
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "forward_message", arguments)
        elsewhere = await answer(client, "forward_message", {**arguments, "id": other_id}, asked.request_state)
        inline = await answer(client, "forward_message", {**arguments, "mode": "inline"}, asked.request_state)
        assert isinstance(elsewhere, InputRequiredResult) and isinstance(inline, InputRequiredResult)
        assert smtp.messages == []
        sent = structured(await answer(client, "forward_message", arguments, asked.request_state))
        again = structured(await answer(client, "forward_message", arguments, asked.request_state))
    assert (sent["status"], again["status"]) == ("sent", "already_sent")
    assert len(smtp.messages) == 1
    assert b"$Forwarded" not in flags_of(account, other_id)


async def test_a_no_sends_nothing_and_marks_nothing(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    message_id, _ = original(account)
    person = Person(action="decline")
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        result = await client.call_tool("forward_message", {"id": message_id, "to": ["alice@example.com"]})
    assert "nothing was changed" in error_text(result)
    assert len(person.shown) == 1 and smtp.messages == []
    assert b"$Forwarded" not in flags_of(account, message_id)
