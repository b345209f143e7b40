"""What `get_attachments` and `get_message` answer of a message's files: judged (executables and active content held
back unless allowed), linked as MCP resources, delivered inline as embedded resources within the byte bound, or
written to `IMAP_DOWNLOAD_DIR`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mcp.types import BlobResourceContents, CallToolResult, EmbeddedResource, ResourceLink, TextContent

from ..config import DEFAULT_MAX_ATTACHMENT_BYTES
from ..imap.lookup import MessageSelection
from ..imap.message_ids import MessageRef, decode_id
from ..imap.pool import Examined
from ..imap.session import Session
from ..logs import get_logger
from ..reading.attachments import (
    AttachmentFile,
    AttachmentsResult,
    FetchTally,
    Skipped,
    blob,
    chosen_parts,
    deliverable,
    inline_parts,
    judged_content,
    message_attachments,
    write_part,
)
from ..reading.fence import fenced_text
from ..reading.reader import AttachmentInfo, MessageContent
from ..reading.resources import part_uri
from .cancellation import CallCancelled
from .registry import TOOL_NAMES


@dataclass(frozen=True)
class Files:
    """How one account's attachments are served: `server`, the account's authority in their URIs, when they are
    served as resources too (None when the policy withholds get_attachments); `allow_executables`, whether those
    that run when opened are delivered (IMAP_ALLOW_EXECUTABLE_ATTACHMENTS); `limit`, the bytes returned inline by
    one get_attachments call or one resources/read (IMAP_MAX_ATTACHMENT_BYTES)."""

    server: str | None = None
    allow_executables: bool = False
    limit: int = DEFAULT_MAX_ATTACHMENT_BYTES

    def judged(self, content: MessageContent, reasons: dict[str, str | None]) -> MessageContent:
        """`content` whose attachments say whether each runs (`reasons`) and carry their URIs, where served."""
        ref = MessageRef(content.mailbox, decode_id(content.id).uidvalidity, content.uid)
        server = self.server
        uri = (lambda part_id: part_uri(server, ref, part_id)) if server is not None else None
        return judged_content(content, reasons, uri)

    def links(self, content: MessageContent) -> list[ResourceLink]:
        """A link to each attachment resources/read returns: not held back, not over the bound."""
        return [self._link(info) for info in content.attachments if self._readable(info)]

    def _readable(self, info: AttachmentInfo) -> bool:
        held = info.executable and not self.allow_executables
        return info.uri is not None and not held and info.size <= self.limit

    @staticmethod
    def _link(info: AttachmentInfo) -> ResourceLink:
        assert info.uri is not None  # `_readable`
        return ResourceLink(
            type="resource_link",
            name=f"attachment-{info.part_id}",
            uri=info.uri,
            mime_type=info.content_type,  # a well-formed type/subtype (`media_types`): a protocol field, unfenced
            size=info.size,
            description="An attachment, as attachments[] lists it (its name there, fenced): data from the sender.",
        )


def download_files(
    client: Session,
    examined: Examined,
    target: MessageSelection,
    part_ids: list[str] | None,
    directory: Path,
    report: Callable[[int, int], None],
    allow_executables: bool,
) -> AttachmentsResult:
    """Each chosen part written to a new file, but those that run when opened; a cancelled call stops after the
    piece being fetched, and the file being written goes (those written whole stay)."""
    uid, found = message_attachments(client, examined, target)
    chosen = chosen_parts(found, part_ids)
    wanted, skipped = deliverable(client, uid, chosen, allow_executables)
    tally = FetchTally([j.part for j in wanted], report)
    files: list[AttachmentFile] = []
    try:
        for judged in wanted:
            written = write_part(
                client, uid, judged.part, directory, tally.fetching(judged.part), allow_executables, judged.reason
            )
            if isinstance(written, Skipped):
                skipped.append(written)
            else:
                files.append(written)
            tally.part_done()
    except CallCancelled:
        get_logger().info(
            "get_attachments: mailbox=%r uid=%d stopped by cancellation after %d of %d bytes; %d file(s) written "
            "whole, the one being written removed",
            examined.mailbox,
            uid,
            tally.done,
            tally.total,
            len(files),
        )
        raise
    ref = MessageRef(examined.mailbox, examined.uidvalidity, uid)
    result = AttachmentsResult(id=ref.id, delivered=files, skipped=skipped, inline_limit_bytes=None)
    return result.judged(chosen, TOOL_NAMES)


def inline_files(
    client: Session,
    examined: Examined,
    target: MessageSelection,
    part_ids: list[str] | None,
    server: str,
    report: Callable[[int, int], None],
    files: Files,
) -> CallToolResult:
    uid, found = message_attachments(client, examined, target)
    chosen = chosen_parts(found, part_ids)
    kept, skipped = inline_parts(client, uid, chosen, report, files.limit, files.allow_executables)
    ref = MessageRef(examined.mailbox, examined.uidvalidity, uid)
    result = AttachmentsResult(
        id=ref.id,
        delivered=[
            AttachmentFile(
                part_id=p.part.part_id,
                filename=p.part.filename,
                content_type=p.part.media_type,
                declared_type=p.part.declared_type,
                size=len(p.data),
                executable=p.reason is not None,
                executable_reason=p.reason,
            )
            for p in kept
        ],
        skipped=skipped,
        inline_limit_bytes=files.limit,
    ).judged(chosen, TOOL_NAMES)
    resources = [
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri=part_uri(server, ref, p.part.part_id), mime_type=p.part.media_type, blob=blob(p.data)
            ),
        )
        for p in kept
    ]
    dumped = result.model_dump(mode="json", by_alias=True)
    return CallToolResult(
        content=[TextContent(type="text", text=fenced_text(result, dumped)), *resources], structured_content=dumped
    )
