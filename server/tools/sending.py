"""`send_message` and `reply_to_message`: mail leaves only after a person approved exactly it, and leaves once.

Both go through the one guard (`protocol.Guard`), bound to the exact recipients, subject and
body (`outgoing.approval`). The message is built before anyone is asked, so whatever cannot be
written as mail is refused then, never after the approval. Sending it exactly once, whoever
replays the approval, is `outgoing.send_once`'s: the approval ledger in the store decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import Field

from imap_mcp.protocol import Guard
from imap_mcp.server.config import SmtpSettings
from imap_mcp.server.imap.lookup import current_ref, resolve_one
from imap_mcp.server.imap.message_ids import MessageRef
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.outgoing.approval import send_request
from imap_mcp.server.outgoing.compose import (
    MAX_RECIPIENTS,
    MAX_SUBJECT_LENGTH,
    Draft,
    check_body,
    check_subject,
    parse_address,
    parse_recipients,
)
from imap_mcp.server.outgoing.reply import reply_draft
from imap_mcp.server.outgoing.send_once import Approved, Sender, SendResult, describe
from imap_mcp.server.outgoing.sent_mailbox import fetch_original
from imap_mcp.server.tools.changes import ConfirmToken
from imap_mcp.server.tools.changes_common import changing, text_result
from imap_mcp.server.tools.deprecated import DeprecatedMailbox, DeprecatedUid
from imap_mcp.server.tools.errors import on_mailbox, refusals

SEND_TOOL = "send_message"
REPLY_TOOL = "reply_to_message"
#: before a refusal that stopped a send before anything left
NOTHING_SENT = "Nothing was sent: "
MAX_BODY_CHARS = 1_000_000

ADDRESSES = "Addresses, each 'alice@example.com' or 'Alice <alice@example.com>'."
To = Annotated[Sequence[str], Field(min_length=1, max_length=MAX_RECIPIENTS, description=ADDRESSES)]
Addresses = Annotated[Sequence[str], Field(max_length=MAX_RECIPIENTS, description=ADDRESSES)]
Body = Annotated[str, Field(max_length=MAX_BODY_CHARS, description="The message text (plain text, sent as written).")]
SaveToSent = Annotated[
    bool,
    Field(
        description="true: file a copy, marked read, in the Sent mailbox. Set false when the provider files sent "
        "mail itself (Gmail, Microsoft 365). Either way a repeated call sends nothing more."
    ),
]


async def _send(
    sender: Sender,
    guard: Guard,
    ctx: Context,
    tool: str,
    draft: Draft,
    original: MessageRef | None,
    save_to_sent: bool,
    confirm_token: str | None,
) -> CallToolResult | InputRequiredResult:
    """Check, ask, and send once: the common path of both tools."""
    with refusals(NOTHING_SENT):
        sent_box = await sender.before_asking(draft, save_to_sent)
    request = send_request(tool, sender.account, draft, original)
    decision = await guard.approve(ctx, request, confirm_token)
    channel = decision.channel
    if channel is None:
        count = len(draft.recipients.everyone)
        return decision.reply(
            lambda token: SendResult(
                status="confirmation_required", message_id=None, recipients=count, confirm_token=token
            )
        )
    with refusals(NOTHING_SENT):
        result = await sender.send(draft, original, sent_box, Approved(tool, decision.evidence(), channel.value))
    return text_result(describe(request.summary, result), result)


def register(mcp: MCPServer, pool: ImapPool, guard: Guard, smtp: SmtpSettings | None, store_url: str) -> None:
    """Offer the sending tools, only when SMTP is configured (`SMTP_HOST`)."""
    if smtp is None:
        return
    sender = Sender(pool, smtp, store_url)
    from_address = parse_address(smtp.sender, "From")
    own_addresses = frozenset(
        a.lower() for a in (from_address.addr_spec, pool.settings.username, smtp.username) if "@" in a
    )

    @guard.tool(
        mcp,
        SEND_TOOL,
        title="Send an email",
        description=(
            "Send a new plain-text email from the account. A person is always asked to approve it first, in a "
            "dialog where the client can show one (recipients, subject and body length); otherwise the first call "
            "returns a confirm_token and sends nothing. Changing recipients, subject or body asks again. Repeating "
            "an approved call sends nothing more."
        ),
        annotations=changing("Send an email", destructive=True, idempotent=False),
    )
    async def send_message(
        to: To,
        subject: Annotated[str, Field(max_length=MAX_SUBJECT_LENGTH, description="The subject line, one line.")],
        body: Body,
        ctx: Context,
        cc: Addresses = (),
        bcc: Addresses = (),
        save_to_sent: SaveToSent = True,
        confirm_token: ConfirmToken = None,
    ) -> Annotated[CallToolResult, SendResult] | InputRequiredResult:
        with refusals(NOTHING_SENT):
            draft = Draft(
                sender=from_address,
                recipients=parse_recipients(to, cc, bcc),
                subject=check_subject(subject),
                body=check_body(body),
            )
        return await _send(sender, guard, ctx, SEND_TOOL, draft, None, save_to_sent, confirm_token)

    @guard.tool(
        mcp,
        REPLY_TOOL,
        title="Reply to a message",
        description=(
            "Reply to a message by its id: to its Reply-To (or From), and with reply_all also to its To and Cc, "
            "never to this account itself; subject 'Re: …' and threading headers are set, and the original is "
            "marked answered. The original is not quoted: write the whole reply in body. A person is always asked "
            "to approve it first, as for send_message."
        ),
        annotations=changing("Reply to a message", destructive=True, idempotent=False),
    )
    async def reply_to_message(
        body: Body,
        ctx: Context,
        id: Annotated[
            str | None, Field(description="The id (imap.…) of the message to answer, as a tool returned it.")
        ] = None,
        reply_all: Annotated[bool, Field(description="true: also to the original's To and Cc.")] = False,
        save_to_sent: SaveToSent = True,
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uid: DeprecatedUid = None,
    ) -> Annotated[CallToolResult, SendResult] | InputRequiredResult:
        with refusals(NOTHING_SENT):
            target = resolve_one(id, mailbox, uid)
        ref = await on_mailbox(pool, lambda c: current_ref(c, target), prefix=NOTHING_SENT)
        original = await on_mailbox(pool, lambda c: fetch_original(c, ref), prefix=NOTHING_SENT)
        with refusals(NOTHING_SENT):
            draft = reply_draft(original, from_address, own_addresses, body, reply_all)
        return await _send(sender, guard, ctx, REPLY_TOOL, draft, ref, save_to_sent, confirm_token)
