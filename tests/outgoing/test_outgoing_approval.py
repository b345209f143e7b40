"""The target an approval to send is bound to: any change to what is sent is another target."""

from __future__ import annotations

import dataclasses

import pytest

from imap_mcp.sealing import fingerprint
from imap_mcp.server.imap.message_ids import MessageRef
from imap_mcp.server.outgoing.approval import send_request, send_target
from imap_mcp.server.outgoing.compose import Draft, parse_address, parse_recipients

ACCOUNT = "demo@imap.example.org"
DRAFT = Draft(
    sender=parse_address("Demo <demo@example.org>", "From"),
    recipients=parse_recipients(["alice@example.com", "bob@example.net"], ["carol@example.com"], ["eve@example.org"]),
    subject="Lunch",
    body="Noon?\n",
)
ORIGINAL = MessageRef("INBOX", 7, 42)


def test_the_order_of_recipients_and_display_names_do_not_change_the_target() -> None:
    same = dataclasses.replace(
        DRAFT,
        recipients=parse_recipients(
            ["Bob <BOB@example.net>", "alice@example.com"], ["carol@example.com"], ["eve@example.org"]
        ),
    )
    assert fingerprint(send_target(ACCOUNT, same)) == fingerprint(send_target(ACCOUNT, DRAFT))


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param({"recipients": parse_recipients(["alice@example.com"], ["carol@example.com"])}, id="to"),
        pytest.param({"recipients": parse_recipients(["alice@example.com", "bob@example.net"])}, id="cc-and-bcc"),
        pytest.param(
            {
                "recipients": parse_recipients(
                    ["alice@example.com", "bob@example.net"], ["carol@example.com"], ["mallory@x.example"]
                )
            },
            id="bcc",
        ),
        pytest.param({"subject": "Lunch!"}, id="subject"),
        pytest.param({"body": "Noon?\n\n"}, id="body"),
        pytest.param({"sender": parse_address("other@example.org", "From")}, id="sender"),
        pytest.param({"in_reply_to": "<a@example.net>"}, id="threading"),
    ],
)
def test_any_change_to_what_is_sent_is_another_target(changed: dict[str, object]) -> None:
    other = dataclasses.replace(DRAFT, **changed)  # type: ignore[arg-type]
    assert fingerprint(send_target(ACCOUNT, other)) != fingerprint(send_target(ACCOUNT, DRAFT))


def test_a_reply_is_bound_to_the_original_and_its_uidvalidity() -> None:
    reply = fingerprint(send_target(ACCOUNT, DRAFT, ORIGINAL))
    assert reply != fingerprint(send_target(ACCOUNT, DRAFT))
    assert reply != fingerprint(send_target(ACCOUNT, DRAFT, MessageRef("INBOX", 8, 42)))
    assert reply != fingerprint(send_target(ACCOUNT, DRAFT, MessageRef("INBOX", 7, 43)))
    assert reply != fingerprint(send_target("demo@other.example", DRAFT, ORIGINAL))


def test_the_request_asks_in_a_dialog_and_names_the_account() -> None:
    request = send_request("send_message", ACCOUNT, DRAFT)
    assert request.dialog
    assert f"Account: {ACCOUNT}" in request.question
    assert "Recipients, subject and body come from the caller" in request.question
    assert request.summary == "send an email to 4 recipients"


def test_the_request_for_a_reply_says_the_recipients_come_from_the_original() -> None:
    question = send_request("reply_to_message", ACCOUNT, DRAFT, ORIGINAL).question
    assert "Recipients, subject and body come from the caller" not in question
    assert "The recipients come from the original message's headers, as its sender wrote them" in question
    assert "the body comes from the caller" in question
