"""Outgoing messages: address checks, header-injection refusal, the built message, the approval question."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
from email.headerregistry import Address

import pytest

from imap_mcp.server.errors import OutgoingError
from imap_mcp.server.outgoing.compose import (
    MAX_RECIPIENTS,
    AddressError,
    Draft,
    HeaderInjection,
    build_message,
    check_subject,
    describe_for_approval,
    message_id_for,
    parse_address,
    parse_recipients,
    wire_bytes,
)
from imap_mcp.server.outgoing.send_once import Outgoing

SENDER = Address("Demo", addr_spec="demo@example.org")
WHEN = dt.datetime(2026, 11, 2, 10, 30, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("raw", "display", "addr_spec"),
    [
        ("alice@example.com", "", "alice@example.com"),
        ("Alice <alice@example.com>", "Alice", "alice@example.com"),
        ('"Smith, John" <john@example.com>', "Smith, John", "john@example.com"),
        ("Jörg Müller <joerg@example.de>", "Jörg Müller", "joerg@example.de"),
    ],
)
def test_an_address_in_either_form_is_accepted(raw: str, display: str, addr_spec: str) -> None:
    address = parse_address(raw, "To")
    assert (address.display_name, address.addr_spec) == (display, addr_spec)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("alice", id="no-domain"),
        pytest.param("alice@", id="empty-domain"),
        pytest.param("a@example.com, b@example.com", id="two-in-one-item"),
        pytest.param("a@example.com; b@example.com", id="semicolon-list"),
        pytest.param("undisclosed-recipients:;", id="group"),
        pytest.param("Alice <alice@example.com", id="unclosed-angle"),
        pytest.param("x@y..com", id="bad-domain"),
        pytest.param("jörg@example.de", id="non-ascii-addr-spec"),
        pytest.param("", id="empty"),
    ],
)
def test_anything_but_one_plain_address_is_refused(raw: str) -> None:
    with pytest.raises(AddressError):
        parse_address(raw, "To")


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("alice@example.com\r\nBcc: eve@evil.example", id="crlf-header"),
        pytest.param("Alice\n <alice@example.com>", id="lf-in-name"),
        pytest.param("alice@example.com\rX: y", id="bare-cr"),
        pytest.param("Alice\x00 <alice@example.com>", id="nul"),
        pytest.param("Alice\t<alice@example.com>", id="tab"),
    ],
)
def test_an_address_with_a_line_break_or_control_character_is_refused_as_injection(raw: str) -> None:
    with pytest.raises(HeaderInjection, match="could add headers of its own"):
        parse_address(raw, "Cc")


@pytest.mark.parametrize("subject", ["Hi\r\nBcc: eve@evil.example", "Hi\nthere", "Hi\rthere", "Hi\x1bthere"])
def test_a_subject_with_a_line_break_or_control_character_is_refused_as_injection(subject: str) -> None:
    with pytest.raises(HeaderInjection, match="subject"):
        check_subject(subject)


#: beyond the C0 controls: the line separators of `str.splitlines()` outside C0, and C1 controls
LINE_SEPARATORS_BEYOND_C0 = ["\x85", "\u2028", "\u2029", "\x80", "\x9f"]


def _splits_lines(character: str) -> bool:
    return len(f"a{character}b".splitlines()) > 1


def test_every_character_splitlines_splits_on_is_refused_in_a_subject_and_an_address() -> None:
    separators = [c for c in map(chr, range(0x110000)) if _splits_lines(c)]
    assert len(separators) == 10  # \n \r \v \f \x1c \x1d \x1e \x85 \u2028 \u2029
    for separator in separators:
        with pytest.raises(HeaderInjection):
            check_subject(f"Hi{separator}there")
        with pytest.raises(HeaderInjection):
            parse_address(f"Alice{separator}Example <alice@example.com>", "To")


@pytest.mark.parametrize("character", LINE_SEPARATORS_BEYOND_C0)
def test_a_unicode_line_separator_or_c1_control_is_refused_before_a_message_is_built(character: str) -> None:
    with pytest.raises(HeaderInjection, match="line break"):
        check_subject(f"Hi{character}Bcc: eve@evil.example")
    with pytest.raises(HeaderInjection, match="could add headers of its own"):
        parse_address(f"Alice{character} <alice@example.com>", "Cc")


def test_a_message_the_email_package_cannot_write_is_refused_as_outgoing_error() -> None:
    with pytest.raises(OutgoingError, match="cannot be written as mail"):
        Outgoing.of(_draft(subject="Hi\u2028there")).check()
    with pytest.raises(OutgoingError, match="cannot be written as mail"):
        Outgoing.of(_draft(body="lone surrogate \ud800")).check()
    with pytest.raises(OutgoingError, match="cannot be written as mail"):
        build_message(_draft(subject="Hi\u2028there"), "<abc.imap-mcp@example.org>", WHEN)
    Outgoing.of(_draft()).check()


def test_a_subject_with_a_tab_and_any_script_is_kept_as_given() -> None:
    assert check_subject("Grüße\tund 你好") == "Grüße\tund 你好"


def test_an_address_repeated_across_lists_is_kept_only_in_the_first() -> None:
    recipients = parse_recipients(
        ["Alice <alice@example.com>"], ["ALICE@example.com", "bob@example.com"], ["bob@example.com", "eve@x.org"]
    )
    assert recipients.bound() == {"to": ["alice@example.com"], "cc": ["bob@example.com"], "bcc": ["eve@x.org"]}


def test_the_bound_recipient_set_is_sorted_and_lower_cased() -> None:
    recipients = parse_recipients(["Zed <Zed@Example.com>", "amy@example.com"])
    assert recipients.bound()["to"] == ["amy@example.com", "zed@example.com"]


def test_no_recipients_or_too_many_are_refused() -> None:
    with pytest.raises(OutgoingError, match="no recipients"):
        parse_recipients([], [], [])
    with pytest.raises(OutgoingError, match=f"at most {MAX_RECIPIENTS}"):
        parse_recipients([f"r{i}@example.com" for i in range(MAX_RECIPIENTS + 1)])


def test_the_message_id_follows_from_the_approval_alone() -> None:
    first = message_id_for(b"approval-1", SENDER)
    assert first == message_id_for(b"approval-1", SENDER)
    assert first != message_id_for(b"approval-2", SENDER)
    assert first.startswith("<") and first.endswith(".imap-mcp@example.org>")


def _draft(**changes: object) -> Draft:
    fields: dict[str, object] = {
        "sender": SENDER,
        "recipients": parse_recipients(["Alice <alice@example.com>"], ["bob@example.net"], ["eve@example.org"]),
        "subject": "Grüße zum Treffen",
        "body": "Hallo Alice,\n\nbis Montag.\n",
    }
    fields.update(changes)
    return Draft(**fields)  # type: ignore[arg-type]


def test_the_built_message_has_every_header_and_the_plain_text_body() -> None:
    message = build_message(_draft(), "<abc.imap-mcp@example.org>", WHEN)
    parsed = email.message_from_bytes(message.as_bytes(), policy=email.policy.default)
    assert parsed["From"] == "Demo <demo@example.org>"
    assert parsed["To"] == "Alice <alice@example.com>"
    assert parsed["Cc"] == "bob@example.net"
    assert parsed["Bcc"] == "eve@example.org"
    assert parsed["Subject"] == "Grüße zum Treffen"
    assert parsed["Message-ID"] == "<abc.imap-mcp@example.org>"
    assert parsed["Date"] == "Mon, 02 Nov 2026 10:30:00 +0000"
    assert parsed.get_content_type() == "text/plain"
    assert parsed.get_content() == "Hallo Alice,\n\nbis Montag.\n"
    assert "In-Reply-To" not in parsed


def test_the_message_for_imap_append_has_crlf_line_ends() -> None:
    raw = wire_bytes(build_message(_draft(), "<abc.imap-mcp@example.org>", WHEN))
    assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")


def test_the_question_lists_recipients_their_number_subject_and_body_length_as_the_callers() -> None:
    draft = _draft()
    text = describe_for_approval(draft)
    assert "to 3 recipients" in text
    assert "To: alice@example.com" in text and "Cc: bob@example.net" in text and "Bcc: eve@example.org" in text
    assert 'Subject, as written by the assistant: "Grüße zum Treffen"' in text
    assert f"Body, as written by the assistant: {len(draft.body)} characters" in text
    assert "bis Montag" not in text


def test_the_question_shows_addresses_without_display_names() -> None:
    draft = _draft(recipients=parse_recipients(['"Click yes, it is fine" <alice@example.com>']))
    assert "Click yes" not in describe_for_approval(draft)
