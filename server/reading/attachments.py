"""Fetching attachments: inline (base64, under a per-call cap) or written to IMAP_DOWNLOAD_DIR; none that runs.

Parts are fetched with BODY.PEEK on an EXAMINEd mailbox, so nothing is marked read, in pieces
(`CHUNK_BYTES` of the encoded part at a time), so an attachment written to a file never has to fit
in memory; after each piece `Fetched` is told (progress, and a cancelled call stops there). A file
name from the sender is reduced to a plain name (no directories, no control characters, no leading
dots), and a file is only ever created, never overwritten: an existing name gets " (1)", " (2)", …
A file is written under a hidden `.….partial` name (opened with O_EXCL|O_NOFOLLOW) and gets its
name only once whole, by a hard link that never replaces anything (so a symlink planted under that
name is passed over, never followed); a download that fails or is cancelled removes it, so no
half-written file ever carries an attachment's name.

An attachment that runs when opened (`executables.executable_reason`: its declared type, its name, or its bytes)
is held back, unless the operator set `IMAP_ALLOW_EXECUTABLE_ATTACHMENTS=true`: it is listed as skipped, saying
why and how to allow it. It is judged before it is fetched, by its name, type and first `JUDGED_BYTES` (one FETCH
for every attachment of a message, `judged_parts`; so `get_message` can say which attachments run without
fetching them), and again by every byte once fetched (a ZIP's entry list is at its end): one written to a file is
judged before it gets its name, so a held-back file never appears under one.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import secrets
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..errors import MailboxError
from ..imap.fetch import fetch
from ..imap.lookup import MessageSelection, check_selection
from ..imap.message_ids import MessageRef
from ..imap.pool import Examined
from ..imap.session import Session
from .executables import executable_reason, file_reason
from .fence import Fenced, SenderLine, SenderMediaType, sender_line
from .media_types import UNKNOWN_TYPE
from .part_sizes import with_decoded_sizes
from .parts import Part, attachments, decoded_stream
from .reader import MessageContent, MessageGone, structure_of
from .warnings import MailWarning, attachment_warnings

#: encoded bytes fetched per round trip when writing a file
CHUNK_BYTES = 1024 * 1024
#: encoded bytes of each attachment's start fetched to judge whether it runs (with its name and type)
JUDGED_BYTES = 1024
#: attachments of one message judged by their first bytes, at most (one FETCH); the others by name and type, until
#: they are fetched whole
MAX_JUDGED_PARTS = 100
#: the setting that lets attachments which run be delivered
ALLOW_EXECUTABLES = "IMAP_ALLOW_EXECUTABLE_ATTACHMENTS"
MAX_NAME_BYTES = 200
_FORBIDDEN = set('/\\:*?"<>|')
#: told how many encoded bytes each fetched piece brought; raises to stop the download (a cancelled call)
Fetched = Callable[[int], None]


def _not_told(count: int) -> None:
    """A `Fetched` for a caller that follows no progress."""


class UnknownPart(MailboxError, ValueError):
    """A requested part id is not an attachment of the message."""


EXECUTABLE = "True when its declared type, its name or its bytes say it runs when opened (a program, a script, macros)."
EXECUTABLE_REASON = "Why it runs when opened; null when it does not."


class AttachmentFile(BaseModel):
    part_id: str
    filename: SenderLine | None = Field(description="The name the sender gave it, decoded.")
    content_type: SenderMediaType = Field(
        alias="type", description=f"MIME type; {UNKNOWN_TYPE} when the declared one is malformed."
    )
    declared_type: SenderLine | None = Field(
        default=None, description=f"The MIME type as the sender declared it, when type shows {UNKNOWN_TYPE} instead."
    )
    size: int = Field(description="Bytes (decoded).")
    path: SenderLine | None = Field(
        default=None,
        description="Where it was written (only with IMAP_DOWNLOAD_DIR); its file name is made from the sender's.",
    )
    executable: bool = Field(default=False, description=EXECUTABLE + f" Delivered only with {ALLOW_EXECUTABLES}=true.")
    executable_reason: str | None = Field(default=None, description=EXECUTABLE_REASON)

    model_config = {"populate_by_name": True}


class Skipped(BaseModel):
    part_id: str
    filename: SenderLine | None
    size: int
    reason: str
    executable: bool = Field(default=False, description=EXECUTABLE + " Such an attachment is held back.")
    executable_reason: str | None = Field(default=None, description=EXECUTABLE_REASON)


class AttachmentsResult(Fenced):
    id: str
    delivered: list[AttachmentFile] = Field(description="Attachments returned inline, or written to disk.")
    skipped: list[Skipped] = Field(description="Attachments not returned, with the reason and what to do.")
    inline_limit_bytes: int | None = Field(
        description="Inline mode: at most this many decoded bytes are returned per call; null when writing files."
    )
    warnings: list[MailWarning] = Field(
        default_factory=list,
        description="What the file names, MIME types and paths of these attachments hold that a careful reader "
        "should know (text addressed to an AI assistant, imitations of the fence), and why.",
    )

    def judged(self, parts: Iterable[Part], tool_names: Iterable[str]) -> AttachmentsResult:
        """This result, of `parts`, with the warnings their names and types as the sender wrote them give, and the
        names of the files written (of a path, only the name is the sender's: the folder, the operator's, may hold
        a tool's name)."""
        attachments = [(part.filename, part.content_type) for part in parts]
        written = [Path(f.path).name for f in self.delivered if f.path]
        return self.model_copy(update={"warnings": attachment_warnings(attachments, written, tool_names)})


def safe_filename(name: str | None, part: Part) -> str:
    """A plain file name from whatever the sender wrote: never a path, never hidden, never empty; and as a
    `SenderLine` shows it (invisible characters gone, fence look-alikes neutralised), so the path a result
    shows, fenced, is the file's."""
    text = unicodedata.normalize("NFC", name or "").replace("\\", "/").rsplit("/", 1)[-1]
    text = "".join(ch for ch in text if ch.isprintable() and ch not in _FORBIDDEN)
    text = sender_line(text).strip().lstrip(".").strip()
    if not text:
        extension = mimetypes.guess_extension(part.media_type) or ".bin"
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
    """A new hidden file in `directory` to write `name` into, opened for writing (and reading back, to judge it);
    it gets `name` only once whole (`give_name`)."""
    path = directory / f".{name}.{secrets.token_hex(6)}.partial"
    if path.parent != directory:  # cannot happen after safe_filename; refuse rather than trust it
        raise ValueError(f"refusing to write outside {directory}")
    return path, os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)


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


def _section_of(data: dict[bytes, Any], section: str) -> bytes | None:
    """The bytes of `BODY[section]` (whole or partial) in a FETCH answer; None when it holds none (NIL, or no
    such item: a message expunged by another session may still be listed in this one, without its content)."""
    prefix = f"BODY[{section}]".encode()
    value = next((value for key, value in data.items() if key.startswith(prefix)), None)
    return value if isinstance(value, bytes) else None


def section_pieces(
    client: Session, uid: int, section: str, fetched: Fetched = _not_told, size: int = 0
) -> Iterator[bytes]:
    """The raw bytes of `BODY[section]` of `uid` (the whole message for ""), `CHUNK_BYTES` a round trip, with
    BODY.PEEK (nothing is marked read); `fetched` is told the size of each piece. A first answer without the
    section (NIL), or empty for a section of `size` bytes, is `MessageGone`: a message expunged by another session
    may still be listed in this one, without its content (Mailutils)."""
    offset = 0
    while True:
        data = fetch(client, [uid], [f"BODY.PEEK[{section}]<{offset}.{CHUNK_BYTES}>"]).get(uid, {})
        chunk = _section_of(data, section)
        if offset == 0 and (chunk is None or (size and not chunk)):
            raise MessageGone(
                f"The message with UID {uid} has no content any more: it was deleted or moved. Search again."
            )
        if not chunk:
            return
        fetched(len(chunk))
        yield chunk
        offset += len(chunk)
        if len(chunk) < CHUNK_BYTES:
            return


def write_part(
    client: Session,
    uid: int,
    part: Part,
    directory: Path,
    fetched: Fetched = _not_told,
    allow_executables: bool = False,
    reason: str | None = None,
) -> AttachmentFile | Skipped:
    """`part` written to a new file in `directory`; or, when its bytes say it runs (`reason`: what its name, type
    and first bytes said), held back before it gets a name (`Skipped`)."""
    name = safe_filename(part.filename, part)
    partial, fd = partial_file(directory, name)
    written = 0
    try:
        with os.fdopen(fd, "w+b") as out:
            for piece in decoded_stream(section_pieces(client, uid, part.part_id, fetched, part.size), part.encoding):
                out.write(piece)
                written += len(piece)
            reason = reason or file_reason(part.filename, part.content_type, out)
        if reason and not allow_executables:
            return held_back(part, reason)
        path = give_name(partial, directory, name)
    finally:
        partial.unlink(missing_ok=True)  # once named, the name holds the file; otherwise it goes
    return AttachmentFile(
        part_id=part.part_id,
        filename=part.filename,
        content_type=part.media_type,
        declared_type=part.declared_type,
        size=written,
        path=str(path),
        executable=reason is not None,
        executable_reason=reason,
    )


def read_part(client: Session, uid: int, part: Part, fetched: Fetched = _not_told) -> bytes:
    return b"".join(decoded_stream(section_pieces(client, uid, part.part_id, fetched, part.size), part.encoding))


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
    found = attachments(structure_of(data, MessageRef(ref.mailbox, examined.uidvalidity, ref.uid)))
    return ref.uid, with_decoded_sizes(client, ref.uid, found)


@dataclass(frozen=True)
class Judged:
    """An attachment, and why it runs when opened (None: nothing says it does)."""

    part: Part
    reason: str | None


def judged_parts(client: Session, uid: int, parts: list[Part]) -> dict[str, str | None]:
    """Why each of `parts` runs when opened, by part id: its name, declared type and first `JUDGED_BYTES` (of at
    most `MAX_JUDGED_PARTS` whose name and type say nothing, in one FETCH, BODY.PEEK), or None."""
    reasons = {part.part_id: executable_reason(part.filename, part.content_type) for part in parts}
    unknown = [part for part in parts if reasons[part.part_id] is None and part.size > 0][:MAX_JUDGED_PARTS]
    if unknown:
        items = [f"BODY.PEEK[{part.part_id}]<0.{JUDGED_BYTES}>" for part in unknown]
        data = fetch(client, [uid], items).get(uid, {})
        for part in unknown:
            raw = _section_of(data, part.part_id)
            # the first piece decoded is the bytes surely right: whole base64 groups, quoted-printable whole lines
            head = next(decoded_stream(iter([raw]), part.encoding), b"") if raw else b""
            reasons[part.part_id] = executable_reason(part.filename, part.content_type, head)
    return reasons


def held_back(part: Part, reason: str) -> Skipped:
    """The entry of an attachment held back because it runs when opened: why, and how the operator allows it."""
    return Skipped(
        part_id=part.part_id,
        filename=part.filename,
        size=part.decoded_size,
        reason=(
            f"held back: it may run when opened ({reason}). Ask the sender for a safe format; the server's operator "
            f"can let such attachments through with {ALLOW_EXECUTABLES}=true."
        ),
        executable=True,
        executable_reason=reason,
    )


def deliverable(
    client: Session, uid: int, parts: list[Part], allow_executables: bool
) -> tuple[list[Judged], list[Skipped]]:
    """The `parts` that may be fetched, each with why it runs (only where allowed), and those held back already
    (by name, type and first bytes: `judged_parts`)."""
    reasons = judged_parts(client, uid, parts)
    judged = [Judged(part, reasons[part.part_id]) for part in parts]
    held = [held_back(j.part, j.reason) for j in judged if j.reason and not allow_executables]
    return [j for j in judged if allow_executables or not j.reason], held


@dataclass(frozen=True)
class InlinePart:
    """An attachment fetched whole, and why it runs when opened (None: it does not)."""

    part: Part
    data: bytes
    reason: str | None


def over_the_limit(part: Part, reason: str | None, limit: int) -> Skipped:
    return Skipped(
        part_id=part.part_id,
        filename=part.filename,
        size=part.decoded_size,
        reason=(
            f"over the inline limit of {limit} bytes per call (get_attachments) or per resources/read "
            "(IMAP_MAX_ATTACHMENT_BYTES); ask for fewer parts, or have the server started with IMAP_DOWNLOAD_DIR to "
            "get files instead"
        ),
        executable=reason is not None,
        executable_reason=reason,
    )


def inline_parts(
    client: Session,
    uid: int,
    parts: list[Part],
    report: Callable[[int, int], None],
    limit: int,
    allow_executables: bool = False,
) -> tuple[list[InlinePart], list[Skipped]]:
    """The parts that fit under `limit` decoded bytes together (in order; by their sizes on the server), fetched;
    the rest with a reason: held back (they run when opened, see `deliverable`; judged again once fetched whole),
    or over the limit. `report(done, total)` follows the bytes fetched of the parts that fit."""
    wanted, skipped = deliverable(client, uid, parts, allow_executables)
    fitting = _fitting([j.part for j in wanted], limit)
    tally = FetchTally(fitting, report)
    kept: list[InlinePart] = []
    for judged in wanted:
        part = judged.part
        if part not in fitting:
            skipped.append(over_the_limit(part, judged.reason, limit))
            continue
        data = read_part(client, uid, part, tally.fetching(part))
        tally.part_done()
        reason = judged.reason or executable_reason(part.filename, part.content_type, data)
        if reason and not allow_executables:
            skipped.append(held_back(part, reason))
            continue
        kept.append(InlinePart(part, data, reason))
    return kept, skipped


def _fitting(parts: list[Part], limit: int) -> list[Part]:
    """Those of `parts` that fit under `limit` decoded bytes together, taken in order."""
    fitting: list[Part] = []
    used = 0
    for part in parts:
        if used + part.decoded_size <= limit:
            fitting.append(part)
            used += part.decoded_size
    return fitting


def blob(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def judged_content(
    content: MessageContent, reasons: Mapping[str, str | None], uri: Callable[[str], str] | None
) -> MessageContent:
    """`content` whose attachments say whether each runs when opened (`reasons`, by part id) and, when the parts
    are served as resources, their `uri`."""
    attachments = [
        info.model_copy(
            update={
                "executable": reasons.get(info.part_id) is not None,
                "executable_reason": reasons.get(info.part_id),
                "uri": uri(info.part_id) if uri is not None else None,
            }
        )
        for info in content.attachments
    ]
    return content.model_copy(update={"attachments": attachments})
