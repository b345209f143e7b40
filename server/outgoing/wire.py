"""An outgoing message as it goes on the wire: built by the email package, each attachment's bytes streamed in.

The standard library's `email` package builds every message (`EmailMessage`, headers and MIME structure, CRLF line
ends). It holds each part encoded, though: a 20 MB attachment would sit there as 27 MB of base64 text, again in the
serialised bytes, and smtplib copies those once more to escape dots. So an attachment goes into the message as a
placeholder (a random token as its payload), and `Wire` writes the message with each token replaced by its
`Payload`'s encoding, produced piece by piece from the bytes: the same 76-character base64 lines the email package
writes, or the bytes as they are (a forwarded message). One copy of each attachment's bytes is ever held.
"""

from __future__ import annotations

import binascii
import hashlib
import re
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.policy import SMTP
from functools import cached_property
from typing import Literal

from imap_mcp.protocol.texts import shown, word

from ..reading.executables import executable_reason

#: bytes encoded per piece: whole base64 lines of 57 bytes (76 characters), about 1.3 MB of text a piece
_LINE_BYTES = 57
_PIECE_BYTES = _LINE_BYTES * 16384
#: bytes of a verbatim payload written per piece
_VERBATIM_PIECE = 1024 * 1024

Buffer = bytes | bytearray


@dataclass(frozen=True, eq=False)
class Payload:
    """The bytes of one part, written `base64` (a file) or `verbatim` (a message forwarded as it is: CRLF lines)."""

    data: Buffer
    encoding: Literal["base64", "verbatim"] = "base64"
    token: str = field(default_factory=lambda: f"imap-mcp-payload-{secrets.token_hex(16)}")

    @property
    def encoded_size(self) -> int:
        if self.encoding == "verbatim":
            return len(self.data)
        lines = -(-len(self.data) // _LINE_BYTES)
        return 4 * -(-len(self.data) // 3) + 2 * lines

    def pieces(self) -> Iterator[bytes]:
        view = memoryview(self.data)
        if self.encoding == "verbatim":
            for start in range(0, len(view), _VERBATIM_PIECE):
                yield bytes(view[start : start + _VERBATIM_PIECE])
            return
        for start in range(0, len(view), _PIECE_BYTES):
            yield _base64_lines(view[start : start + _PIECE_BYTES])


def _base64_lines(block: memoryview) -> bytes:
    encoded = binascii.b2a_base64(block, newline=False)
    width = _LINE_BYTES * 4 // 3
    return b"".join(encoded[i : i + width] + b"\r\n" for i in range(0, len(encoded), width))


@dataclass(frozen=True, eq=False)
class FileToSend:
    """One attachment of an outgoing message: its name and type as they go out, and its bytes (once)."""

    name: str
    mime_type: str
    payload: Payload

    @property
    def size(self) -> int:
        return len(self.payload.data)

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.payload.data).hexdigest()

    def bound(self) -> dict[str, str | int]:
        """What an approval binds of it: a change to any of these is another message."""
        return {"name": self.name, "type": self.mime_type, "size": self.size, "sha256": self.sha256}


#: hex digits of an attachment's SHA-256 a question shows
DIGEST_SHOWN = 12
#: bytes of an attachment the question judges for "it may run when opened" (with its name and type)
_JUDGED_BYTES = 64 * 1024


def describe_files(files: Sequence[FileToSend]) -> list[str]:
    """The question's lines about the attachments: each name (as `shown` renders it), type, size and the first
    `DIGEST_SHOWN` hex digits of its SHA-256 (to compare with the file a person has), and a warning for one that
    looks like it runs when opened (`reading.executables`, from its name, type and first bytes)."""
    if not files:
        return []
    lines = [f"Attachments: {len(files)}, {sum(f.size for f in files)} bytes in all:"]
    for file in files:
        line = f"- {shown(file.name)} ({word(file.mime_type)}, {file.size} bytes) SHA-256 {file.sha256[:DIGEST_SHOWN]}…"
        reason = executable_reason(file.name, file.mime_type, bytes(file.payload.data[:_JUDGED_BYTES]))
        lines.append(f"{line}; it may run when opened: {reason}" if reason else line)
    return lines


def mixed(message: EmailMessage) -> None:
    """Make `message` multipart/mixed (if it is not) under a random boundary no attachment's bytes can contain by
    chance (the email package checks its boundary against the text it holds, never against a placeholder's bytes)."""
    if message.get_content_type() != "multipart/mixed":
        message.make_mixed()
    message.set_boundary(f"imap-mcp-{secrets.token_hex(16)}")


def attach(message: EmailMessage, file: FileToSend) -> None:
    """Add `file` to `message` as an attachment whose body is its placeholder."""
    maintype, subtype = file.mime_type.split("/", 1)
    part = EmailMessage(policy=message.policy)
    part.set_content(b"", maintype=maintype, subtype=subtype, disposition="attachment", filename=file.name)
    part.set_payload(file.payload.token)
    mixed(message)
    message.attach(part)


def attach_message(message: EmailMessage, payload: Payload, eight_bit: bool) -> None:
    """Add a whole message (`payload`, verbatim) to `message` as a message/rfc822 part."""
    part = EmailMessage(policy=message.policy)
    part["Content-Type"] = "message/rfc822"
    part["Content-Transfer-Encoding"] = "8bit" if eight_bit else "7bit"
    part["Content-Disposition"] = "attachment"
    part.set_payload(payload.token)
    mixed(message)
    message.attach(part)


class Wire:
    """`message` serialised (CRLF line ends) with each of `payloads` streamed in where its placeholder stands."""

    def __init__(self, message: EmailMessage, payloads: Sequence[Payload] = ()) -> None:
        skeleton = message.as_bytes(policy=SMTP)
        by_token = {p.token.encode(): p for p in payloads}
        self.segments: list[bytes | Payload] = []
        if not by_token:
            self.segments.append(skeleton)
        else:
            tokens = re.compile(b"|".join(re.escape(t) for t in by_token))
            start = 0
            for found in tokens.finditer(skeleton):
                self.segments += [skeleton[start : found.start()], by_token.pop(found.group())]
                start = found.end()
            self.segments.append(skeleton[start:])
            if by_token:  # cannot happen: every payload was attached to the message it is written with
                raise ValueError("an attachment's placeholder is missing from the message")
        self.size = sum(len(s) if isinstance(s, bytes) else s.encoded_size for s in self.segments)
        self.eight_bit = not skeleton.isascii() or any(
            isinstance(s, Payload) and s.encoding == "verbatim" and not s.data.isascii() for s in self.segments
        )

    def chunks(self) -> Iterator[bytes]:
        for segment in self.segments:
            if isinstance(segment, bytes):
                yield segment
            else:
                yield from segment.pieces()

    def whole(self) -> bytes:
        """All of it at once (IMAP APPEND takes one literal): a second copy of every attachment, held briefly."""
        return b"".join(self.chunks())
