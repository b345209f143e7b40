"""Formatted mail, the account's signature and quoting replies, end to end: what arrives at the SMTP listener and
what lands in Drafts is parsed back by the email package and, as a second independent MIME parser, by the IMAP
server itself (the message APPENDed, its BODYSTRUCTURE fetched)."""

from __future__ import annotations

from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from typing import Any

import pytest
from harness import Account, Person, append_message, served, structured
from smtp_capture import CaptureSMTP
from test_reply_to_message import original_of

from imap_mcp.server.config import load_settings

pytestmark = pytest.mark.anyio

SIGNATURE = "Demo Person\nExample Org"
MARKDOWN = "Monday **works** for me.\n\n<script>alert(1)</script>\n\n![pixel](https://tracker.example/p.png)\n"
#: the original of the reply (the sample mail's "Re: Project kickoff"), as a mail client quotes it
QUOTE = (
    "On Tue, 13 Oct 2026 09:00:00 +0000, Bob Builder wrote:\n"
    "> Monday works for me.\n>\n> > Kickoff is on Monday. Agenda to follow.\n"
)


@pytest.fixture
def signed_env(sending_env: dict[str, str]) -> dict[str, str]:
    return {**sending_env, "SMTP_SIGNATURE": SIGNATURE}


def parts(message: EmailMessage) -> tuple[str, str]:
    """The text/plain and text/html alternatives of a multipart/alternative message."""
    assert message.get_content_type() == "multipart/alternative"
    plain, html = message.get_body(("plain",)), message.get_body(("html",))
    assert isinstance(plain, EmailMessage) and isinstance(html, EmailMessage)
    return plain.get_content(), html.get_content()


def structure_by_the_server(account: Account, raw: bytes) -> Any:
    """The IMAP server's own parse of `raw`: APPEND it, FETCH its BODYSTRUCTURE."""
    uid = append_message(account, raw, mailbox=account.mailbox("Archive"))
    client = account.imap()
    try:
        client.select_folder(account.mailbox("Archive"), readonly=True)
        return client.fetch([uid], ["BODYSTRUCTURE"])[uid][b"BODYSTRUCTURE"]
    finally:
        client.logout()


def assert_alternative(structure: Any) -> None:
    """multipart/alternative of text/plain then text/html, both UTF-8, as the server parsed it."""
    assert structure.is_multipart and structure[1].lower() == b"alternative"
    kinds = [(part[0].lower(), part[1].lower()) for part in structure[0]]
    assert kinds == [(b"text", b"plain"), (b"text", b"html")]
    for part in structure[0]:
        parameters = {key.lower(): value.lower() for key, value in zip(part[2][::2], part[2][1::2], strict=True)}
        assert parameters[b"charset"] == b"utf-8"


@pytest.mark.matrix
async def test_a_markdown_reply_with_a_signature_quotes_the_original_as_a_mail_client_does(
    account: Account, signed_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    ref, message_id, _ = original_of(account, "Re: Project kickoff")
    async with served(load_settings(signed_env), elicitation_callback=person) as client:
        arguments = {"id": ref.id, "body": MARKDOWN, "body_format": "markdown"}
        result = structured(await client.call_tool("reply_to_message", arguments))
    assert result["status"] == "sent"
    [message] = smtp.messages
    assert message["In-Reply-To"] == message_id
    text, html = parts(message)
    body_at, signature_at, quote_at = text.index("Monday **works** for me."), text.index("\n-- \n"), text.index(QUOTE)
    assert body_at < signature_at < quote_at
    assert f"\n-- \n{SIGNATURE}\n" in text and text.endswith(QUOTE)
    assert "<strong>works</strong>" in html and '<blockquote type="cite">Monday works for me.<br>' in html
    assert "-- <br>\nDemo Person<br>\nExample Org" in html
    assert "<script" not in html and "tracker.example" not in html and "<img" not in html
    # raw HTML in Markdown is text: the HTML part shows it escaped, and the alternative says what the HTML shows
    assert "&lt;script&gt;" in html and "\n<script>alert(1)</script>\n" in text
    [question] = person.shown
    assert "characters of Markdown, sent as HTML beside a plain-text alternative" in question
    assert "this account's signature (23 characters, SMTP_SIGNATURE)" in question
    assert "lines quoted from the original message, written by its sender, not by the assistant" in question
    assert "<strong>" not in question and "Monday" not in question
    assert_alternative(structure_by_the_server(account, smtp.raw[0]))


@pytest.mark.matrix
async def test_quote_false_and_signature_false_send_the_body_alone(
    account: Account, signed_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    ref, _, _ = original_of(account, "Re: Project kickoff")
    async with served(load_settings(signed_env), elicitation_callback=person) as client:
        arguments = {"id": ref.id, "body": "Fine.\n", "quote": False, "signature": False}
        assert structured(await client.call_tool("reply_to_message", arguments))["status"] == "sent"
    [message] = smtp.messages
    assert message.get_content_type() == "text/plain" and message.get_content() == "Fine.\n"
    assert "signature" not in person.shown[0] and "quoted" not in person.shown[0]


async def test_an_html_message_is_cleaned_and_carries_its_text_with_the_signature(
    account: Account, signed_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    body = (
        '<p onclick="steal()">Hello <b>Alice</b>, see <a href="https://example.com/plan">the plan</a>.</p>'
        '<img src="https://tracker.example/p.png"><link rel="stylesheet" href="https://cdn.example/x.css">'
        "<style>p { background: url(https://tracker.example/bg.png) }</style><script>alert(1)</script>"
        '<a href="javascript:alert(1)">click</a>'
    )
    async with served(load_settings(signed_env), elicitation_callback=person) as client:
        arguments = {"to": ["alice@example.com"], "subject": "Plan", "body": body, "body_format": "html"}
        assert structured(await client.call_tool("send_message", arguments))["status"] == "sent"
    text, html = parts(smtp.messages[0])
    for gone in ("onclick", "tracker.example", "cdn.example", "<script", "<style", "javascript:", "<img", "<link"):
        assert gone not in html
    assert '<a href="https://example.com/plan" rel="noopener noreferrer">the plan</a>' in html
    assert text.startswith("Hello **Alice**, see the plan <https://example.com/plan>.")
    assert text.endswith(f"\n-- \n{SIGNATURE}\n")
    assert "characters of HTML" in person.shown[0]
    assert_alternative(structure_by_the_server(account, smtp.raw[0]))


async def test_a_plain_message_takes_the_signature_below_the_separator_unless_left_out(
    signed_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    async with served(load_settings(signed_env), elicitation_callback=person) as client:
        for signature in (True, False):
            arguments = {"to": ["alice@example.com"], "subject": "Hi", "body": "Hello.", "signature": signature}
            assert structured(await client.call_tool("send_message", arguments))["status"] == "sent"
    signed, unsigned = (m.get_content() for m in smtp.messages)
    assert signed == f"Hello.\n\n-- \n{SIGNATURE}\n" and unsigned == "Hello.\n"
    assert smtp.messages[0].get_content_type() == "text/plain"


@pytest.mark.matrix
async def test_a_markdown_reply_draft_is_saved_quoted_and_signed_as_alternatives(
    account: Account, signed_env: dict[str, str]
) -> None:
    ref, message_id, _ = original_of(account, "Re: Project kickoff")
    async with served(load_settings(signed_env)) as client:
        arguments = {"in_reply_to": ref.id, "body": "See *you* then.", "body_format": "markdown"}
        saved = structured(await client.call_tool("save_draft", arguments))
    client = account.imap()
    try:
        client.select_folder(saved["mailbox"], readonly=True)
        [uid] = client.search(["HEADER", "In-Reply-To", message_id])
        fetched = client.fetch([uid], ["BODYSTRUCTURE", "BODY.PEEK[]"])[uid]
    finally:
        client.logout()
    assert_alternative(fetched[b"BODYSTRUCTURE"])
    message = message_from_bytes(fetched[b"BODY[]"].replace(b"\r\n", b"\n"), policy=default)
    assert isinstance(message, EmailMessage)
    text, html = parts(message)
    assert text.startswith("See _you_ then.\n\n-- \n") and text.endswith(QUOTE)
    assert "<em>you</em>" in html and '<blockquote type="cite">' in html


@pytest.mark.matrix
async def test_a_forward_with_an_html_note_keeps_the_original_quoted_below_the_signature(
    account: Account, signed_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    ref, _, _ = original_of(account, "Re: Project kickoff")
    async with served(load_settings(signed_env), elicitation_callback=person) as client:
        arguments = {"id": ref.id, "to": ["carol@example.com"], "body": "<p>FYI</p>", "body_format": "html"}
        assert structured(await client.call_tool("forward_message", arguments))["status"] == "sent"
    text, html = parts(smtp.messages[0])
    assert text.index("FYI") < text.index("\n-- \n") < text.index("---------- Forwarded message ----------")
    assert "&gt; Monday works for me.<br>" in html
    assert "Note, as written by the assistant: 4 characters of HTML" in person.shown[0]


@pytest.mark.matrix
async def test_a_new_html_draft_without_the_signature_is_saved_as_alternatives(
    account: Account, signed_env: dict[str, str]
) -> None:
    async with served(load_settings(signed_env)) as client:
        arguments = {
            "to": ["alice@example.com"],
            "subject": "Agenda",
            "body": "<ol><li>Budget</li></ol>",
            "body_format": "html",
            "signature": False,
        }
        saved = structured(await client.call_tool("save_draft", arguments))
    client = account.imap()
    try:
        client.select_folder(saved["mailbox"], readonly=True)
        [uid] = client.search(["SUBJECT", "Agenda"])
        fetched = client.fetch([uid], ["BODYSTRUCTURE", "BODY.PEEK[]"])[uid]
    finally:
        client.logout()
    assert_alternative(fetched[b"BODYSTRUCTURE"])
    message = message_from_bytes(fetched[b"BODY[]"].replace(b"\r\n", b"\n"), policy=default)
    assert isinstance(message, EmailMessage)
    text, html = parts(message)
    assert "Budget" in text and "-- " not in text and "<li>Budget</li>" in html and "signature" not in html


@pytest.mark.matrix
async def test_an_updated_markdown_draft_is_sent_as_a_mail_client_builds_it(
    account: Account, signed_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    """A draft saved plain, updated in place to Markdown with the signature, then sent: the message that arrives is
    the updated one, alternatives as a mail client builds them, by both parsers."""
    draft = {"to": ["alice@example.com"], "subject": "Agenda for Monday"}
    async with served(load_settings(signed_env), mode="2026-07-28", elicitation_callback=person) as client:
        saved = structured(await client.call_tool("save_draft", {**draft, "body": "Agenda: budget\n"}))
        updated = structured(
            await client.call_tool(
                "update_draft",
                {"id": saved["id"], **draft, "body": "Agenda:\n\n- **budget**\n- hiring\n", "body_format": "markdown"},
            )
        )
        sent = structured(await client.call_tool("send_draft", {"id": updated["id"]}))
    assert (updated["status"], sent["status"]) == ("updated", "sent")
    [message] = smtp.messages
    text, html = parts(message)
    assert (
        "**budget**" in text and "hiring" in text and f"\n-- \n{SIGNATURE}\n" in text and "Agenda: budget" not in text
    )
    assert "<strong>budget</strong>" in html and "<li>hiring</li>" in html
    assert_alternative(structure_by_the_server(account, smtp.raw[0]))
