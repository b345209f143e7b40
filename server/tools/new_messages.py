"""`list_new_messages`: what arrived since the last look, which it records as a keyword on the messages it lists.

It changes nothing a person sees or would miss: the keyword `$ImapMcpListed` is not the read state (`\\Seen`
is never touched) and comes off again with set_message_flags or any mail client. So it asks no one, and is
marked neither read-only (it sets a keyword) nor destructive; nor idempotent, since a repeat lists nothing.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.reading.new_messages import NewMessages, list_new
from imap_mcp.server.tools.changes_common import changing, log_change
from imap_mcp.server.tools.errors import on_mailbox
from imap_mcp.server.tools.reading import PageLimit

TITLE = "List new messages"


def register(mcp: MCPServer, pool: ImapPool) -> None:
    @mcp.tool(
        name="list_new_messages",
        title=TITLE,
        description=(
            "List the messages that arrived in a mailbox since this tool last listed it, newest first, with the "
            "same summaries as search_messages. Each listed message is marked (keyword $ImapMcpListed, not the "
            "read state) and is not listed again; call again with offset 0 for the next page. The first call on "
            "a mailbox (first_look: true) lists every message in it."
        ),
        annotations=changing(TITLE, destructive=False, idempotent=False),
    )
    async def list_new_messages(
        mailbox: Annotated[str, Field(min_length=1, description="Mailbox to look at, as list_mailboxes names it.")] = (
            "INBOX"
        ),
        offset: Annotated[
            int, Field(ge=0, description="How many of the newest new messages to skip; they stay new.")
        ] = 0,
        limit: PageLimit = 20,
    ) -> NewMessages:
        found = await on_mailbox(pool, lambda client: list_new(client, mailbox, offset, limit))
        if found.messages:
            log_change("list_new_messages (mark listed)", mailbox, [m.uid for m in found.messages])
        return found
