"""`list_mailboxes`: every mailbox with its role."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from ..imap_pool import ImapPool
from ..mailboxes import MailboxInfo, list_mailboxes
from .annotations import read_only
from .errors import on_mailbox

TITLE = "List mailboxes"


class MailboxList(BaseModel):
    mailboxes: list[MailboxInfo] = Field(description="INBOX first, then the others by name.")


def register(mcp: MCPServer, pool: ImapPool) -> None:
    @mcp.tool(
        name="list_mailboxes",
        title=TITLE,
        description=(
            "List every mailbox (folder) of the account with its name, hierarchy delimiter, role "
            "(inbox, sent, drafts, trash, junk, archive, all, flagged, or none) and whether it can "
            "hold messages."
        ),
        annotations=read_only(TITLE),
    )
    async def list_mailboxes_tool() -> MailboxList:
        return MailboxList(mailboxes=await on_mailbox(pool, list_mailboxes))
