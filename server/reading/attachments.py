"""Fetching attachments: inline (base64, under a per-call cap) or written to IMAP_DOWNLOAD_DIR.

Parts are fetched with BODY.PEEK on an EXAMINEd mailbox, so nothing is marked read, in pieces
(`CHUNK_BYTES` of the encoded part at a time), so an attachment written to a file never has to fit
in memory; after each piece `Fetched` is told (progress, and a cancelled call stops there). A file
name from the sender is reduced to a plain name (no directories, no control characters, no leading
dots), and a file is only ever created, never overwritten: an existing name gets " (1)", " (2)", …
A file is written under a hidden `.….partial` name (opened with O_EXCL|O_NOFOLLOW) and gets its
name only once whole, by a hard link that never replaces anything (so a symlink planted under that
name is passed over, never followed); a download that fails or is cancelled removes it, so no
half-written file ever carries an attachment's name.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import secrets
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import BaseModel, Field

from ..errors import MailboxError
from ..imap.fetch import fetch
from ..imap.lookup import MessageSelection, check_selection
from ..imap.message_ids import MessageRef
from ..imap.pool import Examined
from ..imap.session import Session
from .fence import Fenced, SenderLine
from .parts import Part, attachments, decoded_stream
from .reader import MessageGone, structure_of

#: attachments returned inline by one call, decoded bytes in total
INLINE_LIMIT_BYTES = 8 * 1024 * 1024
#: encoded bytes fetched per round trip when writing a file
CHUNK_BYTES = 1024 * 1024
MAX_NAME_BYTES = 200
_FORBIDDEN = set('/\\:*?"<>|')
#: told how many encoded bytes each fetched piece brought; raises to stop the download (a cancelled call)
Fetched = Callable[[int], None]


def _not_told(count: int) -> None:
    """A `Fetched` for a caller that follows no progress."""


class UnknownPart(MailboxError, ValueError):
    """A requested part id is not an attachment of the message."""


class AttachmentFile(BaseModel):
    part_id: str
    filename: SenderLine | None = Field(description="The name the sender gave it, decoded.")
    content_type: str = Field(alias="type")
    size: int = Field(description="Bytes (decoded).")
    path: str | None = Field(default=None, description="Where it was written (only with IMAP_DOWNLOAD_DIR).")

    model_config = {"populate_by_name": True}


class Skipped(BaseModel):
    part_id: str
    filename: SenderLine | None
    size: int
    reason: str


class AttachmentsResult(Fenced):
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


def partial_file(directory: Path, name: str) -> tuple[Path, int]:
    """A new hidden file in `directory` to write `name` into, opened for writing; it gets `name` only once
    whole (`give_name`)."""
    path = directory / f".{name}.{secrets.token_hex(6)}.partial"
    if path.parent != directory:  # cannot happen after safe_filename; refuse rather than trust it
        raise ValueError(f"refusing to write outside {directory}")
    return path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)


def give_name(partial: Path, directory: Path, name: str) -> Path:
    """`partial` linked as `name` (or `name (n)`) in `directory`: a link never replaces an existing name."""
    for candidate in _candidates(name):
        path = directory / candidate
        if path.parent != directory:  # cannot happen after safe_filename; refuse rather than trust it
            raise ValueError(f"refusing to write outside {directory}")
        try:
            os.link(partial, path, follow_symlinks=False)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory} already holds {name} and 999 numbered copies; clean it up and try again.")


def section_pieces(client: Session, uid: int, section: str, fetched: Fetched = _not_told) -> Iterator[bytes]:
    """The raw bytes of `BODY[section]` of `uid` (the whole message for ""), `CHUNK_BYTES` a round trip, with
    BODY.PEEK (nothing is marked read); `fetched` is told the size of each piece."""
    offset = 0
    prefix = f"BODY[{section}]".encode()
    while True:
        data = fetch(client, [uid], [f"BODY.PEEK[{section}]<{offset}.{CHUNK_BYTES}>"]).get(uid, {})
        chunk = next((value or b"" for key, value in data.items() if key.startswith(prefix)), b"")
        if not isinstance(chunk, bytes) or not chunk:
            return
        fetched(len(chunk))
        yield chunk
        offset += len(chunk)
        if len(chunk) < CHUNK_BYTES:
            return


def write_part(client: Session, uid: int, part: Part, directory: Path, fetched: Fetched = _not_told) -> AttachmentFile:
    name = safe_filename(part.filename, part)
    partial, fd = partial_file(directory, name)
    written = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for piece in decoded_stream(section_pieces(client, uid, part.part_id, fetched), part.encoding):
                out.write(piece)
                written += len(piece)
        path = give_name(partial, directory, name)
    finally:
        partial.unlink(missing_ok=True)  # once named, the name holds the file; otherwise it goes
    return AttachmentFile(
        part_id=part.part_id, filename=part.filename, content_type=part.content_type, size=written, path=str(path)
    )


def read_part(client: Session, uid: int, part: Part, fetched: Fetched = _not_told) -> bytes:
    return b"".join(decoded_stream(section_pieces(client, uid, part.part_id, fetched), part.encoding))


class FetchTally:
    """Encoded bytes of attachments fetched so far out of `total` (their sizes on the server), told to
    `report(done, total)` after each piece and each part: never falling, never past the end of the part
    fetched, ending at `total`."""

    def __init__(self, parts: list[Part], report: Callable[[int, int], None]) -> None:
        self.total = sum(part.size for part in parts)
        self.done = 0
        self._parts_done = 0
        self._report = report

    def fetching(self, part: Part) -> Fetched:
        """The `Fetched` for `part`, the next part fetched."""
        start = self._parts_done
        end = self._parts_done = start + part.size
        fetched = 0

        def told(count: int) -> None:
            nonlocal fetched
            fetched += count
            self._advance(min(start + fetched, end))

        return told

    def part_done(self) -> None:
        """The part being fetched is whole: progress is at its end, whatever the pieces added up to."""
        self._advance(self._parts_done)

    def _advance(self, done: int) -> None:
        self.done = max(self.done, done)
        self._report(self.done, self.total)


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


def message_attachments(client: Session, examined: Examined, target: MessageSelection) -> tuple[int, list[Part]]:
    (ref,) = check_selection(target, examined.uidvalidity)
    data = fetch(client, [ref.uid], ["BODYSTRUCTURE"]).get(ref.uid)
    if data is None:
        raise MessageGone(
            f"No message with UID {ref.uid} in mailbox {ref.mailbox!r}: it was deleted or moved. Search again."
        )
    return ref.uid, attachments(structure_of(data, MessageRef(ref.mailbox, examined.uidvalidity, ref.uid)))


def inline_parts(
    client: Session, uid: int, parts: list[Part], report: Callable[[int, int], None]
) -> tuple[list[tuple[Part, bytes]], list[Skipped]]:
    """The parts that fit under `INLINE_LIMIT_BYTES` together (in order; by their sizes on the server), and the
    rest with a reason. `report(done, total)` follows the bytes fetched of the parts that fit."""
    fitting = _fitting(parts)
    tally = FetchTally(fitting, report)
    kept: list[tuple[Part, bytes]] = []
    skipped: list[Skipped] = []
    for part in parts:
        if part not in fitting:
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
        kept.append((part, read_part(client, uid, part, tally.fetching(part))))
        tally.part_done()
    return kept, skipped


def _fitting(parts: list[Part]) -> list[Part]:
    """Those of `parts` that fit under `INLINE_LIMIT_BYTES` together, taken in order."""
    fitting: list[Part] = []
    used = 0
    for part in parts:
        if used + part.decoded_size <= INLINE_LIMIT_BYTES:
            fitting.append(part)
            used += part.decoded_size
    return fitting


def blob(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
