"""`list_mailboxes`: every mailbox with its role."""

from __future__ import annotations

from typing import Annotated

from imapclient import IMAPClient
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from imap_mcp.server.imap.mailboxes import MailboxInfo, list_mailboxes, with_counts
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.tools.annotations import read_only
from imap_mcp.server.tools.errors import on_mailbox

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
            "hold messages. With counts: true, also how many messages each holds and how many are unread."
        ),
        annotations=read_only(TITLE),
    )
    async def list_mailboxes_tool(
        counts: Annotated[bool, Field(description="Also return message and unread counts (one STATUS each).")] = False,
    ) -> MailboxList:
        return MailboxList(mailboxes=await on_mailbox(pool, _counted if counts else list_mailboxes))


def _counted(client: IMAPClient) -> list[MailboxInfo]:
    return with_counts(client, list_mailboxes(client))
