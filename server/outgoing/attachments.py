"""Attachments of outgoing mail, from three sources: a part of a message in the mailbox, a file under
`IMAP_UPLOAD_DIR`, or bytes the caller gives (base64). Each becomes a `wire.FileToSend`: the name and type it goes
out with, and its bytes, read once, whose SHA-256 the approval binds.

A file is read only from under the folder the operator set: the caller's path is relative to it, and opened one
name at a time from the folder down, never following a symbolic link (`O_NOFOLLOW` at every step, `..` refused),
so no path and no link planted in the folder leads out of it. Only a regular file is read, and only up to the
limit; and only one with no other name (`st_nlink` 1): a hard link is the file itself under a second name, and
nothing on the file says whether that name is inside the folder, so a file hard-linked anywhere (even within the
folder) is refused: copy it in instead. A part of a message is fetched with BODY.PEEK (nothing is marked read),
in pieces decoded as they come, into one growing buffer.
"""

from __future__ import annotations

import binascii
import errno
import mimetypes
import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ArgumentError, OutgoingError
from ..imap.lookup import MessageSelection
from ..imap.pool import Examined
from ..imap.session import Session
from ..reading.attachments import chosen_parts, message_attachments, safe_filename, section_pieces
from ..reading.parts import Part, decoded_stream
from .wire import FileToSend, Payload

#: attachments of one message, at most
MAX_ATTACHMENTS = 20
#: decoded bytes of one attachment given inline (content_base64), at most
MAX_INLINE_BYTES = 10 * 1024 * 1024
_MIME_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")
#: types an attachment of bytes cannot have: their parts are structure, not bytes
_STRUCTURE = ("multipart/", "message/")
_OCTETS = "application/octet-stream"


class MailPart(BaseModel):
    """A part of a message in the mailbox."""

    model_config = ConfigDict(extra="forbid")
    id: Annotated[str, Field(min_length=1, description="The message's id (imap.…), as a tool returned it.")]
    part_id: Annotated[
        str, Field(min_length=1, max_length=64, description="The attachment's part_id, as get_message lists it.")
    ]


class UploadedFile(BaseModel):
    """A file the operator put under IMAP_UPLOAD_DIR."""

    model_config = ConfigDict(extra="forbid")
    path: Annotated[
        str,
        Field(
            min_length=1,
            max_length=1024,
            description="Relative to IMAP_UPLOAD_DIR, e.g. 'reports/q3.pdf'; no '..', no symbolic links.",
        ),
    ]


class InlineFile(BaseModel):
    """Bytes given in the call."""

    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=255, description="The file name it is sent with.")]
    mime_type: Annotated[str, Field(min_length=3, max_length=255, description="e.g. application/pdf.")]
    content_base64: Annotated[
        str,
        Field(
            max_length=4 * -(-MAX_INLINE_BYTES // 3),
            description=f"The file's bytes, base64 (at most {MAX_INLINE_BYTES} bytes once decoded).",
        ),
    ]


AttachmentSource = MailPart | UploadedFile | InlineFile


class AttachmentRefused(OutgoingError):
    """An attachment cannot be read as given; the message says what to change."""


def checked_type(mime_type: str) -> str:
    """`type/subtype`, lower-cased, of bytes; `ArgumentError` for anything else."""
    kind = mime_type.strip().lower()
    if not _MIME_TYPE.fullmatch(kind) or kind.startswith(_STRUCTURE):
        raise ArgumentError(
            f"mime_type {mime_type[:80]!r} is not the type of a file: give it as type/subtype, e.g. application/pdf "
            "or image/png (not multipart/… or message/…)."
        )
    return kind


def _name(name: str | None, mime_type: str) -> str:
    """A plain file name to send under (no directories, no control or direction characters)."""
    return safe_filename(name, Part(part_id="1", content_type=mime_type))


def inline_file(source: InlineFile) -> FileToSend:
    kind = checked_type(source.mime_type)
    try:
        data = binascii.a2b_base64(source.content_base64.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        raise ArgumentError(
            f"content_base64 of {source.name[:80]!r} is not base64: give the file's bytes as standard base64 "
            "(A-Z, a-z, 0-9, + and /, padded with =), without line breaks."
        ) from None
    if len(data) > MAX_INLINE_BYTES:
        raise ArgumentError(
            f"{source.name[:80]!r} is {len(data)} bytes; an attachment given inline may have at most "
            f"{MAX_INLINE_BYTES}. Put larger files under IMAP_UPLOAD_DIR and give their path."
        )
    return FileToSend(_name(source.name, kind), kind, Payload(data))


def uploaded_file(upload_dir: Path | None, source: UploadedFile, limit: int) -> FileToSend:
    """The file at `source.path` under `upload_dir`, read whole (at most `limit` bytes)."""
    if upload_dir is None:
        raise AttachmentRefused(
            "Files from disk are not enabled: the operator has not set IMAP_UPLOAD_DIR. Attach the file inline "
            "(name, mime_type, content_base64) instead."
        )
    names = _relative_names(source.path)
    data = _read_under(upload_dir, names, source.path, limit)
    name = names[-1]
    kind = checked_type(mimetypes.guess_type(name, strict=False)[0] or _OCTETS)
    return FileToSend(_name(name, kind), kind, Payload(data))


def _relative_names(path: str) -> list[str]:
    pure = PurePosixPath(path)
    if "\x00" in path or pure.is_absolute() or not pure.parts or ".." in pure.parts:
        raise AttachmentRefused(
            f"The path {path[:200]!r} is not a path inside IMAP_UPLOAD_DIR: give it relative to that folder, "
            "e.g. 'reports/q3.pdf', without '..' and not starting with '/'."
        )
    return [part for part in pure.parts if part != "."]


def _read_under(directory: Path, names: list[str], shown: str, limit: int) -> bytes:
    """Open `names` one by one from `directory` down, following no symbolic link; read the regular file at the end."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    opened: list[int] = []
    try:
        opened.append(os.open(directory, os.O_RDONLY | os.O_DIRECTORY))
        for name in names[:-1]:
            opened.append(os.open(name, flags | os.O_DIRECTORY, dir_fd=opened[-1]))
        opened.append(os.open(names[-1], flags | os.O_NONBLOCK, dir_fd=opened[-1]))
        status = os.fstat(opened[-1])
        if not stat.S_ISREG(status.st_mode):
            raise AttachmentRefused(f"{shown[:200]!r} in IMAP_UPLOAD_DIR is not a regular file; give a file's path.")
        if status.st_nlink > 1:
            raise AttachmentRefused(
                f"{shown[:200]!r} in IMAP_UPLOAD_DIR is a hard link (the file has {status.st_nlink} names, and another "
                "may be outside the folder); those are refused. Copy the file into the folder instead of linking it."
            )
        if status.st_size > limit:
            raise AttachmentRefused(
                f"{shown[:200]!r} is {status.st_size} bytes, more than the {limit} left of what a message may have "
                "in all (SMTP_MAX_MESSAGE_BYTES). Send a smaller file, or fewer attachments."
            )
        with os.fdopen(opened.pop(), "rb") as file:
            data = file.read(limit + 1)
    except OSError as exc:
        raise AttachmentRefused(_why_not(exc, shown)) from None
    finally:
        for fd in opened:
            os.close(fd)
    if len(data) > limit:
        raise AttachmentRefused(f"{shown[:200]!r} grew while it was read, past {limit} bytes; try again once written.")
    return data


def _why_not(exc: OSError, shown: str) -> str:
    where = f"{shown[:200]!r} in IMAP_UPLOAD_DIR"
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return f"{where} is, or goes through, a symbolic link (or a file where a folder should be); those are refused."
    if exc.errno == errno.ENOENT:
        return f"There is no file {where}; list the folder's files with the operator, and give the path relative to it."
    return f"{where} cannot be read ({exc.strerror}); check its permissions."


def mail_parts(client: Session, examined: Examined, target: MessageSelection, part_ids: list[str]) -> list[FileToSend]:
    """The parts `part_ids` of the message `target` (its mailbox examined), each fetched and decoded once."""
    uid, found = message_attachments(client, examined, target)
    return [_part_file(client, uid, part) for part in chosen_parts(found, part_ids)]


def _part_file(client: Session, uid: int, part: Part) -> FileToSend:
    data = bytearray()
    for piece in decoded_stream(section_pieces(client, uid, part.part_id, size=part.size), part.encoding):
        data += piece
    kind = part.content_type if _MIME_TYPE.fullmatch(part.content_type) else _OCTETS
    kind = _OCTETS if kind.startswith(_STRUCTURE) else kind
    return FileToSend(_name(part.filename, kind), kind, Payload(data))
