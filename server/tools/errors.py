"""The one place where refusals and failures become tool errors the model can act on.

Every `ImapMcpError` (see `server.errors`: `MailboxError` from the IMAP side, `OutgoingError`
for mail to send) carries a message written for the model; here it becomes a `ToolError` with
that message, after a prefix where the tool has something to add ("Nothing was sent: "). The
pool has already turned every imapclient, socket and ssl exception into a `MailboxError`, so
anything else escaping a tool is a crash, reported by the SDK with a generic text.
"""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from imap_mcp.server.errors import ImapMcpError
from imap_mcp.server.imap.pool import ImapPool, Operation

T = TypeVar("T")


class refusals:  # lower case: used like a function, `with refusals("Nothing was sent: "):`
    """Turn an `ImapMcpError` raised inside into a `ToolError` with its message, after `prefix`.

    A class rather than `@contextmanager`, so type checkers know it never swallows an exception.
    """

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(exc, ImapMcpError):
            raise ToolError(self.prefix + str(exc)) from None


async def on_mailbox(pool: ImapPool, operation: Operation[T], retry: bool = True, prefix: str = "") -> T:
    """Run `operation` through the pool; a refusal or failure becomes a `ToolError` with its message."""
    with refusals(prefix):
        return await pool.run(operation, retry=retry)
