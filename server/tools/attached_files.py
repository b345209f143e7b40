"""The files a message or a draft attaches, read once in the caller's order: inline (base64), from
`IMAP_UPLOAD_DIR`, or a part of a message in the mailbox; refused as soon as they come to more than
`SMTP_MAX_MESSAGE_BYTES` together."""

from __future__ import annotations

from collections.abc import Sequence

import anyio.to_thread

from ..config import OutgoingFiles
from ..errors import OutgoingError
from ..imap.lookup import resolve_one
from ..imap.pool import ImapPool, InMailbox
from ..outgoing.attachments import (
    AttachmentSource,
    InlineFile,
    MailPart,
    UploadedFile,
    inline_file,
    mail_parts,
    uploaded_file,
)
from ..outgoing.wire import FileToSend


async def files_of(
    pool: ImapPool, sources: Sequence[AttachmentSource], settings: OutgoingFiles
) -> tuple[FileToSend, ...]:
    """Each attachment's name, type and bytes, read once, in the caller's order; refused as soon as they come to
    more than SMTP_MAX_MESSAGE_BYTES together."""
    files: list[FileToSend] = []
    for source in sources:
        room = settings.max_message_bytes - sum(f.size for f in files)
        if isinstance(source, InlineFile):
            files.append(await anyio.to_thread.run_sync(inline_file, source))
        elif isinstance(source, UploadedFile):
            files.append(await anyio.to_thread.run_sync(uploaded_file, settings.upload_dir, source, room))
        else:
            files += await mail_part_files(pool, source)
        if files[-1].size > room:
            raise OutgoingError(
                f"The attachments come to more than the {settings.max_message_bytes} bytes a message may have "
                f"(SMTP_MAX_MESSAGE_BYTES) with {files[-1].name!r}. Send fewer or smaller attachments."
            )
    return tuple(files)


async def mail_part_files(pool: ImapPool, source: MailPart) -> list[FileToSend]:
    target = resolve_one(source.id, None, None)
    return await pool.run(
        InMailbox(target.mailbox, lambda c, examined: mail_parts(c, examined, target, [source.part_id]))
    )
