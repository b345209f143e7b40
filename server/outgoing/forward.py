"""Forwarding a message: its text quoted below the caller's note with its attachments kept (`inline`), or the whole
original attached as it is (`attachment`, message/rfc822).

The original was written by a stranger, so nothing of it reaches the new message's headers but its subject (one
line, control characters turned into spaces, after "Fwd:"); its text and the header lines quoted above it are body
text, and its attachments go out with safe names (`reading.attachments.safe_filename`).

The person approves the forward of exactly this original: the approval binds its id and a SHA-256 over what is
forwarded of it — every byte of it attached whole, or the quoted header block, text and each attachment's digest
inline. A message attached whole goes verbatim (7bit or 8bit) when it is mail a server may carry as it is (CRLF
lines of at most 998 bytes, no NUL); anything else is attached as a file (`forwarded.eml`, base64), so its bytes
arrive exactly as they are either way. It is fetched once, into one buffer, and streamed from there (`wire`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass, replace
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Literal

from ..errors import OutgoingError
from ..imap.fetch import fetch
from ..imap.lookup import MessageSelection, check_selection
from ..imap.message_ids import MessageRef
from ..imap.pool import Examined
from ..imap.session import Session
from ..reading.attachments import section_pieces
from ..reading.headers import parse_headers
from ..reading.reader import MessageGone, fetch_message, message_content
from .attachments import mail_parts
from .compose import CONTROL_CHARACTERS, MAX_SUBJECT_LENGTH, Draft, Recipients, build_message, check_body
from .formatting import BodyFormat, as_quoted, compose_body
from .wire import FileToSend, Payload, attach_message

Mode = Literal["inline", "attachment"]
FORWARDED = b"$Forwarded"
#: characters of the original's text quoted inline, at most
MAX_QUOTED_CHARS = 1_000_000
_FWD_PREFIX = re.compile(r"^\s*(fwd?|fw)\s*:", re.IGNORECASE)
_CONTROLS = re.compile(f"[{CONTROL_CHARACTERS}]+")
_QUOTED_HEADERS = (("From", "sender"), ("Date", "date"), ("Subject", "subject"), ("To", "to"), ("Cc", "cc"))
_MAX_LINE = 998
_BLOCK = (_MAX_LINE + 2) // 2


@dataclass(frozen=True)
class Forwarded:
    """What a forward takes of the message it forwards, and the digest its approval binds."""

    ref: MessageRef
    subject: str
    digest: str
    #: inline: the quoted header lines and text, and the attachments kept
    quoted: str = ""
    files: tuple[FileToSend, ...] = ()
    #: attachment: the whole message, and whether it can go verbatim (and then whether it has 8-bit bytes)
    whole: Payload | None = None
    verbatim: bool = False
    eight_bit: bool = False

    @property
    def size(self) -> int:
        return len(self.whole.data) if self.whole is not None else sum(f.size for f in self.files)


def forward_subject(subject: str) -> str:
    """`Fwd: subject`, one line, unless it says Fwd: (or Fw:) already; cut to what a subject may be."""
    line = _CONTROLS.sub(" ", subject).strip()
    return (line if _FWD_PREFIX.match(line) else f"Fwd: {line}".rstrip())[:MAX_SUBJECT_LENGTH]


def _digest(content: dict[str, object]) -> str:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def read_inline(client: Session, examined: Examined, target: MessageSelection) -> Forwarded:
    """The original's header lines and text (HTML converted) to quote, and its attachments, each fetched once."""
    fetched = fetch_message(client, examined, target, MAX_QUOTED_CHARS)
    content = message_content(fetched, MAX_QUOTED_CHARS)
    headers = content.headers
    lines = [f"{label}: {getattr(headers, name)}" for label, name in _QUOTED_HEADERS if getattr(headers, name)]
    text = content.body.text.replace("\x00", "")
    if content.truncated:
        text += f"\n[The rest of the original's text, past {MAX_QUOTED_CHARS} characters, is not quoted.]"
    quoted = "\n".join(
        ["---------- Forwarded message ----------", *lines, "", *(f"> {line}" for line in text.splitlines())]
    )
    part_ids = [a.part_id for a in fetched.attachments]
    files = tuple(mail_parts(client, examined, target, part_ids)) if part_ids else ()
    digest = _digest({"quoted": quoted, "attachments": [f.bound() for f in files]})
    return Forwarded(fetched.ref, headers.subject, digest, quoted=quoted, files=files)


def read_whole(client: Session, examined: Examined, target: MessageSelection, limit: int) -> Forwarded:
    """Every byte of the original (at most `limit`), fetched in pieces into one buffer, and its subject."""
    (ref,) = check_selection(target, examined.uidvalidity)
    size = fetch(client, [ref.uid], ["RFC822.SIZE"]).get(ref.uid, {}).get(b"RFC822.SIZE")
    if size is None:
        raise MessageGone(
            f"No message with UID {ref.uid} in mailbox {ref.mailbox!r}: it was deleted or moved. Search again."
        )
    if int(size) > limit:
        raise OutgoingError(
            f"The message is {int(size)} bytes; forwarded whole it would be more than the {limit} a message may have "
            "(SMTP_MAX_MESSAGE_BYTES). Forward it inline, or send a note with its id instead."
        )
    raw = bytearray()
    for piece in section_pieces(client, ref.uid, ""):
        raw += piece
    header_end = raw.find(b"\r\n\r\n")
    headers = parse_headers(bytes(raw[: header_end if header_end >= 0 else min(len(raw), 256 * 1024)]))
    verbatim = _carried_as_is(raw)
    digest = _digest({"message_sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)})
    ref = MessageRef(ref.mailbox, examined.uidvalidity, ref.uid)
    return Forwarded(
        ref, headers.subject, digest, whole=Payload(raw, "verbatim" if verbatim else "base64"),
        verbatim=verbatim, eight_bit=verbatim and not raw.isascii(),
    )  # fmt: skip


def _carried_as_is(raw: bytearray) -> bool:
    """Whether `raw` is mail SMTP carries unchanged: CRLF line ends only, lines of at most 998 bytes, no NUL."""
    if b"\x00" in raw or not raw.count(b"\r") == raw.count(b"\n") == raw.count(b"\r\n"):
        return False
    return not _has_long_line(raw)


def _has_long_line(raw: bytearray) -> bool:
    """Whether a line of `raw` (CRLF lines) is longer than 998 bytes. A longer line is a run of 1,000 bytes or more
    without LF, which holds a whole block of `_BLOCK` bytes aligned on `_BLOCK`: only such blocks are measured."""
    for start in range(0, len(raw), _BLOCK):
        if raw.find(b"\n", start, start + _BLOCK) < 0:
            line_start = raw.rfind(b"\n", 0, start) + 1
            line_end = raw.find(b"\n", start)
            length = (line_end - 1 if line_end >= 0 else len(raw)) - line_start
            if length > _MAX_LINE:
                return True
    return False


@dataclass(frozen=True)
class Forward:
    """The forward as it will be sent: the caller's note, and the original quoted or attached."""

    draft: Draft
    original: Forwarded
    mode: Mode

    @property
    def attached_whole(self) -> Payload | None:
        """The original, when it goes verbatim as a message/rfc822 part (otherwise it is one of the files)."""
        return self.original.whole if self.original.verbatim else None

    @property
    def payloads(self) -> tuple[Payload, ...]:
        whole = self.attached_whole
        return tuple(f.payload for f in self.draft.attachments) + ((whole,) if whole is not None else ())

    def build(self, message_id: str, when: dt.datetime) -> EmailMessage:
        message = build_message(self.draft, message_id, when)
        if self.attached_whole is not None:
            attach_message(message, self.attached_whole, self.original.eight_bit)
        return message


def forward(
    sender: Address,
    recipients: Recipients,
    note: str,
    original: Forwarded,
    mode: Mode,
    body_format: BodyFormat = "text",
    signature: str | None = None,
) -> Forward:
    """The forward of `original` with `note` (in `body_format`) above it, and `signature` below the note."""
    files = original.files
    quoted = as_quoted(original.quoted) if mode == "inline" else None
    if mode == "attachment" and original.whole is not None and not original.verbatim:
        files = (FileToSend("forwarded.eml", "application/octet-stream", original.whole),)
    draft = Draft(sender=sender, recipients=recipients, subject=forward_subject(original.subject), body="")
    draft = draft.with_body(compose_body(check_body(note), body_format, signature, quoted))
    return Forward(replace(draft, attachments=files), original, mode)
