"""An event's `from` and `subject`, built from header bytes as the server sends them: bounded, one line, and a
`from` that an RFC 5322 parser reads as exactly the addresses the message names (issue #25)."""

from __future__ import annotations

import base64
import datetime as dt
import re
from email.errors import NonASCIILocalPartDefect
from email.headerregistry import Address
from email.policy import default as default_policy

from hypothesis import given, settings
from hypothesis import strategies as st

from imap_mcp.server.imap.fetch import UNREADABLE
from imap_mcp.server.imap.message_ids import MessageRef
from imap_mcp.server.outgoing.compose import CONTROL_CHARACTERS
from imap_mcp.server.webhooks.payloads import (
    HEADER_BYTES,
    MAX_ADDRESSES,
    MAX_FROM_CHARS,
    MAX_NAME_CHARS,
    MAX_SUBJECT_CHARS,
    message_data,
    sender_text,
    subject_text,
)

REF = MessageRef("INBOX", 7, 42)
LINE_BREAKS = "\r\n\x0b\x0c\x1c\x85\u2028\u2029"
CONTROLS = re.compile(f"[{CONTROL_CHARACTERS}\ud800-\udfff]")


def encoded(text: str) -> str:
    """`text` as one RFC 2047 encoded word: a sender can put any character into a display name or subject."""
    return f"=?utf-8?b?{base64.b64encode(text.encode()).decode()}?="


def from_header(value: str) -> bytes:
    return f"From: {value}\r\n\r\n".encode()


def read_back(sender: str) -> tuple[Address, ...]:
    """The addresses a receiver's RFC 5322 (and RFC 6532) parser reads in an event's `from`, without a defect."""
    header = default_policy.header_factory("From", sender)
    assert all(isinstance(d, NonASCIILocalPartDefect) for d in header.defects), (sender, header.defects)
    return tuple(header.addresses)


def test_a_display_name_with_quotes_and_brackets_stays_one_quoted_name() -> None:
    forged = 'Bob",<evil@x>'
    for value in ['"Bob\\",<evil@x>" <b@example.com>', f"{encoded(forged)} <b@example.com>"]:
        sender = sender_text(from_header(value))
        assert sender == '"Bob\\",<evil@x>" <b@example.com>'
        [address] = read_back(sender)
        assert (address.display_name, address.addr_spec) == (forged, "b@example.com")


def test_an_ordinary_from_reads_as_before() -> None:
    assert sender_text(from_header("Bob Sender <bob@example.org>")) == "Bob Sender <bob@example.org>"
    assert sender_text(from_header("=?utf-8?q?Gr=C3=BC=C3=9Fe?= <g@example.de>")) == "Grüße <g@example.de>"
    assert sender_text(b"\r\n") == ""  # no From at all


@settings(max_examples=60, deadline=None)
@given(
    name=st.text(st.characters(exclude_categories=["Cs"]), max_size=90),
    box=st.from_regex(r"[A-Za-z0-9_-]{1,10}(\.[A-Za-z0-9_-]{1,10}){0,2}", fullmatch=True),
)
def test_any_display_name_prints_as_one_address_with_that_name_on_one_line(name: str, box: str) -> None:
    sender = sender_text(from_header(f"{encoded(name)} <{box}@example.net>"))
    [address] = read_back(sender)
    assert address.username == box and address.domain == "example.net"
    shown = address.display_name
    assert len(shown) <= MAX_NAME_CHARS and not CONTROLS.search(shown)
    plain = " ".join(name.split())
    # a name with a CR or LF is one the email package refuses: the address is kept without it (test below)
    if len(plain) <= MAX_NAME_CHARS and plain.isprintable() and not {"\r", "\n"} & set(name):
        assert shown == plain


def test_control_characters_and_line_separators_become_spaces() -> None:
    subject = subject_text(f"Subject: {encoded('Hi' + LINE_BREAKS + 'there')}\r\n\r\n".encode())
    assert subject == "Hi there"
    separators = encoded("Sep\u2028Par\u2029Nul\x00Del\x7f")
    assert sender_text(from_header(f"{separators} <a@example.com>")) == "Sep Par Nul Del <a@example.com>"
    line_break = encoded("Line\r\nBreak")
    sender = sender_text(from_header(f"{line_break} <a@example.com>, Ann <ann@example.com>"))
    # the email package refuses a header whose display name decodes to a line break: its addresses are kept
    assert sender == "a@example.com, Ann <ann@example.com>"


def test_at_most_ten_addresses_and_whole_addresses_within_the_length() -> None:
    many = ", ".join(f"p{n}@example.net" for n in range(25))
    assert [a.addr_spec for a in read_back(sender_text(from_header(many)))] == [
        f"p{n}@example.net" for n in range(MAX_ADDRESSES)
    ]
    named = ", ".join(f"{encoded(str(n) * 200)} <{'x' * 60}{n}@example.net>" for n in range(MAX_ADDRESSES))
    sender = sender_text(from_header(named))
    found = read_back(sender)
    assert len(sender) <= MAX_FROM_CHARS and 0 < len(found) < MAX_ADDRESSES
    assert [a.addr_spec for a in found] == [f"{'x' * 60}{n}@example.net" for n in range(len(found))]
    assert all(a.display_name == str(n) * (MAX_NAME_CHARS - 1) + "…" for n, a in enumerate(found))


def test_addresses_that_are_no_address_are_left_out() -> None:
    unusable = [
        "undisclosed-recipients:;",
        "<>",
        "just-a-name",
        f"{'y' * 300}@example.net",  # longer than any path SMTP carries
        "a@[x>,<evil@y]",  # a valid domain literal that a receiver splitting on commas reads as two addresses
        ".@example.net",  # the email package would print these local parts unquoted, unreadable
        "a..b@example.net",
    ]
    raw = "".join(f"From: {value}\r\n" for value in [*unusable, "ok@example.com"]).encode() + b"\r\n"
    assert sender_text(raw) == "ok@example.com"


def test_a_from_cut_at_the_byte_limit_loses_its_last_address_not_a_wrong_one() -> None:
    raw = from_header(", ".join(f"person-{n:05d}@recipients.example.net" for n in range(40_000)))[:HEADER_BYTES]
    found = [a.addr_spec for a in read_back(sender_text(raw))]
    assert found == [f"person-{n:05d}@recipients.example.net" for n in range(MAX_ADDRESSES)]
    few = from_header("p0@example.net, p1@example.net, p2@example.net, z@" + "z" * HEADER_BYTES)[:HEADER_BYTES]
    assert sender_text(few) == "p0@example.net, p1@example.net, p2@example.net"  # not z@zzz…, cut short


def test_a_from_the_email_package_cannot_parse_gives_no_address() -> None:
    assert sender_text(from_header("(" * 3000)) == ""  # RecursionError inside the parser


def test_a_display_name_that_would_print_as_an_encoded_word_is_left_out() -> None:
    """Printed unquoted, `=?utf-8?q?evil=40x?=` would be decoded by the receiver into another name."""
    name = encoded("=?utf-8?q?evil=40x?=")
    assert sender_text(from_header(f"{name} <b@example.com>")) == "b@example.com"


def test_the_subject_is_decoded_and_cut() -> None:
    long = "Quarterly " * 40
    subject = subject_text(f"Subject: {encoded(long)}\r\n\r\n".encode())
    assert len(subject) == MAX_SUBJECT_CHARS and subject.endswith("…") and subject.startswith("Quarterly Quarterly")
    assert subject_text(b"\r\n") == ""


def test_undecodable_bytes_in_an_encoded_word_leave_no_lone_surrogate() -> None:
    """The email package keeps them as surrogates, which the outbox could not encode as UTF-8."""
    assert sender_text(from_header("=?utf-8?b?/w==?= <a@example.com>")) == "a@example.com"  # 0xFF: no UTF-8
    assert subject_text(b"Subject: =?utf-8?b?/w==?=\r\n\r\n") == "=?utf-8?b?/w==?="  # shown as written


def test_a_message_whose_fields_could_not_be_read_has_null_sender_and_subject() -> None:
    received = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    readable = {
        b"INTERNALDATE": received,
        b"BODY[HEADER.FIELDS (FROM)]<0>": b"From: a@example.com\r\n\r\n",
        b'BODY[HEADER.FIELDS ("SUBJECT")]<0>': b"Subject: hello\r\n\r\n",  # as Courier names it
    }
    assert message_data("a@example.org", REF, readable) == {
        "account": "a@example.org",
        "mailbox": "INBOX",
        "id": REF.id,
        "uid": 42,
        "from": "a@example.com",
        "subject": "hello",
        "date": "2026-11-02T08:00:00Z",
    }
    for data in ({UNREADABLE: "one IMAP response for it was over 1000000 bytes"}, {}):
        event = message_data("a@example.org", REF, data)
        assert (event["from"], event["subject"], event["date"], event["uid"]) == (None, None, None, 42)
