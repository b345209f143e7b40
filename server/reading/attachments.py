"""Fetching attachments: inline (base64, under a per-call cap) or written to IMAP_DOWNLOAD_DIR.

Parts are fetched with BODY.PEEK on an EXAMINEd mailbox, so nothing is marked read. Files are
written in pieces (`CHUNK_BYTES` of the encoded part at a time), so an attachment never has to fit
in memory. A file name from the sender is reduced to a plain name (no directories, no control
characters, no leading dots), and a file is only ever created, never overwritten: an existing
name gets " (1)", " (2)", … The file is opened with O_EXCL|O_NOFOLLOW, so a symlink planted
under that name is refused rather than followed.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from imapclient import IMAPClient
from pydantic import BaseModel, Field

from imap_mcp.server.errors import MailboxError
from imap_mcp.server.imap.fetch import fetch
from imap_mcp.server.imap.lookup import MessageSelection, check_selection
from imap_mcp.server.imap.pool import Examined
from imap_mcp.server.reading.parts import Part, attachments, decoded_stream, parse_structure
from imap_mcp.server.reading.reader import MessageGone

#: attachments returned inline by one call, decoded bytes in total
INLINE_LIMIT_BYTES = 8 * 1024 * 1024
#: encoded bytes fetched per round trip when writing a file
CHUNK_BYTES = 1024 * 1024
MAX_NAME_BYTES = 200
_FORBIDDEN = set('/\\:*?"<>|')


class UnknownPart(MailboxError, ValueError):
    """A requested part id is not an attachment of the message."""


class AttachmentFile(BaseModel):
    part_id: str
    filename: str | None = Field(description="The name the sender gave it, decoded.")
    content_type: str = Field(alias="type")
    size: int = Field(description="Bytes (decoded).")
    path: str | None = Field(default=None, description="Where it was written (only with IMAP_DOWNLOAD_DIR).")

    model_config = {"populate_by_name": True}


class Skipped(BaseModel):
    part_id: str
    filename: str | None
    size: int
    reason: str


class AttachmentsResult(BaseModel):
    id: str
    delivered: list[AttachmentFile] = Field(description="Attachments returned inline, or written to disk.")
    skipped: list[Skipped] = Field(description="Attachments not returned, with the reason and what to do.")
    inline_limit_bytes: int | None = Field(
        description="Inline mode: at most this many decoded bytes are returned per call; null when writing files."
    )


def safe_filename(name: str | None, part: Part) -> str:
    """A plain file name from whatever the sender wrote: never a path, never hidden, never empty."""
    text = unicodedata.normalize("NFC", name or "").replace("\\", "/").rsplit("/", 1)[-1]
    text = "".join(ch for ch in text if ch.isprintable() and ch not in _FORBIDDEN)
    text = text.strip().lstrip(".").strip()
    if not text:
        extension = mimetypes.guess_extension(part.content_type) or ".bin"
        text = f"attachment-{part.part_id}{extension}"
    stem, dot, extension = text.rpartition(".")
    if not dot or len(extension) > 16:
        stem, extension = text, ""
    while len(text.encode()) > MAX_NAME_BYTES:
        stem = stem[:-1]
        text = f"{stem}.{extension}" if extension else stem
    return text


def _candidates(name: str) -> Iterator[str]:
    yield name
    stem, dot, extension = name.rpartition(".")
    if not dot:
        stem, extension = name, ""
    for n in range(1, 1000):
        yield f"{stem} ({n}).{extension}" if extension else f"{stem} ({n})"


def create_new_file(directory: Path, name: str) -> tuple[Path, int]:
    """A new file in `directory` named `name` (or `name (n)`), opened for writing; never an existing one."""
    for candidate in _candidates(name):
        path = directory / candidate
        if path.parent != directory:  # cannot happen after safe_filename; refuse rather than trust it
            raise ValueError(f"refusing to write outside {directory}")
        try:
            return path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory} already holds {name} and 999 numbered copies; clean it up and try again.")


def _section(data: dict[bytes, Any], part: Part) -> bytes:
    prefix = f"BODY[{part.part_id}]".encode()
    return next((value or b"" for key, value in data.items() if key.startswith(prefix)), b"")


def _raw_chunks(client: IMAPClient, uid: int, part: Part) -> Iterator[bytes]:
    offset = 0
    while True:
        item = f"BODY.PEEK[{part.part_id}]<{offset}.{CHUNK_BYTES}>"
        chunk = _section(fetch(client, [uid], [item]).get(uid, {}), part)
        if not chunk:
            return
        yield chunk
        offset += len(chunk)
        if len(chunk) < CHUNK_BYTES:
            return


def write_part(client: IMAPClient, uid: int, part: Part, directory: Path) -> AttachmentFile:
    path, fd = create_new_file(directory, safe_filename(part.filename, part))
    written = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for piece in decoded_stream(_raw_chunks(client, uid, part), part.encoding):
                out.write(piece)
                written += len(piece)
    except BaseException:
        path.unlink(missing_ok=True)  # a half-written file is worse than none
        raise
    return AttachmentFile(
        part_id=part.part_id, filename=part.filename, content_type=part.content_type, size=written, path=str(path)
    )


def read_part(client: IMAPClient, uid: int, part: Part) -> bytes:
    data = _section(fetch(client, [uid], [f"BODY.PEEK[{part.part_id}]"]).get(uid, {}), part)
    return b"".join(decoded_stream(iter([data]), part.encoding))


def chosen_parts(structure_parts: list[Part], part_ids: list[str] | None) -> list[Part]:
    if not part_ids:
        return structure_parts
    by_id = {p.part_id: p for p in structure_parts}
    unknown = [p for p in part_ids if p not in by_id]
    if unknown:
        available = ", ".join(by_id) or "none"
        raise UnknownPart(
            f"Part id(s) {', '.join(unknown)} are not attachments of this message; its attachments are: "
            f"{available} (see get_message)."
        )
    return [by_id[p] for p in dict.fromkeys(part_ids)]


def message_attachments(client: IMAPClient, examined: Examined, target: MessageSelection) -> tuple[int, list[Part]]:
    (ref,) = check_selection(target, examined.uidvalidity)
    data = fetch(client, [ref.uid], ["BODYSTRUCTURE"]).get(ref.uid)
    if data is None or b"BODYSTRUCTURE" not in data:
        raise MessageGone(
            f"No message with UID {ref.uid} in mailbox {ref.mailbox!r}: it was deleted or moved. Search again."
        )
    return ref.uid, attachments(parse_structure(data[b"BODYSTRUCTURE"]))


def inline_parts(client: IMAPClient, uid: int, parts: list[Part]) -> tuple[list[tuple[Part, bytes]], list[Skipped]]:
    """The parts that fit under `INLINE_LIMIT_BYTES` together (in order), and the rest with a reason."""
    kept: list[tuple[Part, bytes]] = []
    skipped: list[Skipped] = []
    used = 0
    for part in parts:
        if used + part.decoded_size > INLINE_LIMIT_BYTES:
            skipped.append(
                Skipped(
                    part_id=part.part_id,
                    filename=part.filename,
                    size=part.decoded_size,
                    reason=(
                        f"over the inline limit of {INLINE_LIMIT_BYTES} bytes per call; ask for fewer parts, "
                        "or have the server started with IMAP_DOWNLOAD_DIR to get files instead"
                    ),
                )
            )
            continue
        data = read_part(client, uid, part)
        used += len(data)
        kept.append((part, data))
    return kept, skipped


def blob(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
