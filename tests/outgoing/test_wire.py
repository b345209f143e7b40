"""The wire form of an outgoing message: what the email package writes, with attachments streamed in; DATA's dots."""

from __future__ import annotations

import os
from email.message import EmailMessage
from email.policy import SMTP

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imap_mcp.server.outgoing.smtp import dot_stuffed
from imap_mcp.server.outgoing.wire import FileToSend, Payload, Wire, attach, attach_message


def _message() -> EmailMessage:
    message = EmailMessage()
    message["From"] = "demo@example.org"
    message["To"] = "alice@example.com"
    message["Subject"] = "Files"
    message.set_content("Two files.\n")
    return message


@pytest.mark.parametrize("size", [0, 1, 56, 57, 58, 57 * 16384, 57 * 16384 + 1, 3 * 1024 * 1024 + 7])
def test_a_streamed_attachment_is_written_exactly_as_the_email_package_writes_it(size: int) -> None:
    data = os.urandom(size)
    file = FileToSend("data.bin", "application/octet-stream", Payload(data))
    streamed = _message()
    attach(streamed, file)
    written = _message()
    written.add_attachment(data, maintype="application", subtype="octet-stream", filename="data.bin")
    boundary = streamed.get_boundary()
    assert boundary is not None
    written.set_boundary(boundary)
    wire = Wire(streamed, [file.payload])
    expected = written.as_bytes(policy=SMTP)
    assert wire.whole() == expected
    assert wire.size == len(expected)
    assert b"".join(wire.chunks()) == expected


def test_the_bytes_of_an_attachment_are_held_once_and_streamed_in_pieces() -> None:
    data = bytearray(os.urandom(5 * 1024 * 1024))
    file = FileToSend("big.bin", "application/octet-stream", Payload(data))
    message = _message()
    attach(message, file)
    pieces = list(Wire(message, [file.payload]).chunks())
    assert file.payload.data is data
    assert max(len(piece) for piece in pieces) < 1_400_000
    assert len(pieces) > 4


def test_a_message_attached_verbatim_keeps_every_byte_and_says_8bit_when_it_has_8_bit_bytes() -> None:
    original = "Subject: Grüße\r\nFrom: a@example.com\r\n\r\nSchöne Grüße\r\n.\r\n".encode()
    payload = Payload(bytearray(original), "verbatim")
    message = _message()
    attach_message(message, payload, eight_bit=True)
    wire = Wire(message, [payload])
    whole = wire.whole()
    assert original in whole and wire.eight_bit
    assert b"Content-Type: message/rfc822\r\nContent-Transfer-Encoding: 8bit\r\n" in whole


def test_the_wire_has_crlf_line_ends_only() -> None:
    file = FileToSend("a.txt", "text/plain", Payload(b"line\nother\rline\r\n"))
    message = _message()
    attach(message, file)
    whole = Wire(message, [file.payload]).whole()
    assert whole.count(b"\n") == whole.count(b"\r\n") == whole.count(b"\r")


def test_an_approval_binds_each_attachments_name_type_size_and_digest() -> None:
    bound = FileToSend("a.pdf", "application/pdf", Payload(b"%PDF-1.4\n")).bound()
    assert bound == {
        "name": "a.pdf",
        "type": "application/pdf",
        "size": 9,
        "sha256": "e5c62df5dab5c87b6a015ef3d43597074d1eec433b15f51aec63b8582d0e4ab4",
    }


@given(st.lists(st.sampled_from([b".", b"\r\n", b"a", b"..", b"\r\n.", b".\r\n"]), max_size=40), st.data())
def test_dots_are_doubled_at_every_line_start_however_the_pieces_are_cut(
    parts: list[bytes], data: st.DataObject
) -> None:
    text = b"".join(parts) + b"\r\n"
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    stuffed = b"".join(dot_stuffed(pieces))
    expected = b"\r\n".join(b"." + line if line.startswith(b".") else line for line in text.split(b"\r\n"))
    assert stuffed == expected


def test_dot_stuffing_ends_the_last_line() -> None:
    assert b"".join(dot_stuffed([b"a\r\n", b".b"])) == b"a\r\n..b\r\n"
