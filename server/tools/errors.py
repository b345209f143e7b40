"""Turning mailbox failures into tool errors the model can act on."""

from __future__ import annotations

from typing import TypeVar

from imapclient.exceptions import IMAPClientError
from mcp.server.mcpserver.exceptions import ToolError

from imap_mcp.server.imap.connection import MailboxUnavailable
from imap_mcp.server.imap.pool import ImapPool, Operation

T = TypeVar("T")


async def on_mailbox(pool: ImapPool, operation: Operation[T], retry: bool = True) -> T:
    """Run `operation` through the pool; a mailbox failure becomes a `ToolError` with its message."""
    try:
        return await pool.run(operation, retry=retry)
    except MailboxUnavailable as exc:
        raise ToolError(str(exc)) from None
    except IMAPClientError as exc:
        raise ToolError(f"The IMAP server refused the request: {exc}") from None
