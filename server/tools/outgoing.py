"""`send_message`, `reply_to_message` and `save_draft`: outgoing mail (`server/outgoing/`).

Mail leaves only after a person approved exactly it, and leaves once. Both sending tools go
through the one guard (`protocol.Guard`), bound to the exact recipients, subject and body
(`outgoing.approval`). The message is built before anyone is asked, so whatever cannot be written
as mail is refused then, never after the approval. Sending it exactly once, whoever replays the
approval, is `outgoing.send_once`'s: the approval ledger in the store decides. Saving a draft
sends nothing and asks no one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Annotated, Literal

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import BaseModel, Field

from imap_mcp.protocol import ApprovalRequest, Guard
from imap_mcp.protocol.local_time import DialogClock
from imap_mcp.sealing import fingerprint

from ..config import OutgoingFiles, SmtpSettings
from ..guard import bound_to_the_store
from ..imap.lookup import MessageSelection, current_ref, resolve_one
from ..imap.message_ids import MessageRef
from ..imap.pool import Examined, ImapPool, InMailbox
from ..imap.session import Session
from ..outgoing.approval import forward_request, send_draft_request, send_request
from ..outgoing.attachments import (
    MAX_ATTACHMENTS,
    AttachmentSource,
)
from ..outgoing.compose import (
    MAX_RECIPIENTS,
    MAX_SUBJECT_LENGTH,
    Draft,
    check_body,
    check_subject,
    parse_address,
    parse_recipients,
)
from ..outgoing.drafts import (
    DraftGone,
    append_draft,
    original_in_inbox,
    outgoing_copy,
    read_draft,
)
from ..outgoing.formatting import composed
from ..outgoing.forward import Forwarded, Mode, forward, read_inline, read_whole
from ..outgoing.known import SendQuestion
from ..outgoing.policy import SendPolicy
from ..outgoing.quoting import quote_of
from ..outgoing.reply import reply_draft
from ..outgoing.send_once import Approved, Outgoing, Sender, SendResult, describe
from ..outgoing.sent_mailbox import fetch_original
from ..outgoing.wire import attach
from .arguments import (
    BodyFormatArgument,
    ConfirmToken,
    DeprecatedMailbox,
    DeprecatedUid,
    QuoteArgument,
    SignatureArgument,
)
from .attached_files import files_of
from .drafts import (
    UPDATE_TOOL,
    DraftCc,
    DraftComposer,
    DraftInReplyTo,
    DraftReplyAll,
    DraftSubject,
    DraftText,
    DraftTo,
    DraftUpdated,
    Formatting,
    Updating,
    record_saved,
    saved_id,
    update_in_place,
)
from .registry import offer
from .results import log_change, text_result

SEND_TOOL = "send_message"
REPLY_TOOL = "reply_to_message"
MAX_BODY_CHARS = 1_000_000

ADDRESSES = "Addresses, each 'alice@example.com' or 'Alice <alice@example.com>'."
To = Annotated[Sequence[str], Field(min_length=1, max_length=MAX_RECIPIENTS, description=ADDRESSES)]
Addresses = Annotated[Sequence[str], Field(max_length=MAX_RECIPIENTS, description=ADDRESSES)]
Body = Annotated[str, Field(max_length=MAX_BODY_CHARS, description="The message text, written as body_format says.")]
Attachments = Annotated[
    Sequence[AttachmentSource],
    Field(
        max_length=MAX_ATTACHMENTS,
        description="Files to attach, each one of: a part of a message in the mailbox {id, part_id} (as get_message "
        "lists its attachments); a file under the operator's IMAP_UPLOAD_DIR {path} (relative to it); or bytes "
        "{name, mime_type, content_base64}. The person approving sees each one's name and size; the approval is "
        "bound to each one's bytes, so a file changed before the answer is asked about again.",
    ),
]
SaveToSent = Annotated[
    bool,
    Field(
        description="true: file a copy, marked read, in the Sent mailbox. Set false when the provider files sent "
        "mail itself (Gmail, Microsoft 365). Either way a repeated call sends nothing more."
    ),
]


FORWARD_TOOL = "forward_message"
#: what every sending tool's description says of the operator's policy and of repeating a call, path by path
POLICY_AND_REPEATING = (
    " The operator's send policy (get_server_info: sending) refuses recipients it does not allow before anyone is "
    "asked, and may ask a second confirmation for a recipient never written to before. Repeating a call: in a "
    "dialog each new call asks again and each yes sends one more copy (the dialog says when an identical message "
    "went out in the last hour); a client's retry carrying an answer already acted on sends nothing more. Without a "
    "dialog, the call repeated with the same confirm_token sends nothing more, while a new call without it gets a "
    "new token that sends another copy."
)


@dataclass(frozen=True)
class Asking:
    """What the operator set for sending: the send policy, and the zone the questions' times are written in."""

    policy: SendPolicy = field(default_factory=SendPolicy)
    clock: DialogClock = field(default_factory=DialogClock)


@dataclass(frozen=True)
class Sending:
    """What every sending tool sends with: the account's pool and sender, the guard, and the operator's settings."""

    pool: ImapPool
    sender: Sender
    guard: Guard
    asking: Asking


async def _send(
    sending: Sending,
    ctx: Context,
    request: ApprovalRequest,
    outgoing: Outgoing,
    save_to_sent: bool,
    confirm_token: str | None,
    original: MessageRef | None = None,
    draft: MessageRef | None = None,
    forwarded: MessageRef | None = None,
) -> CallToolResult | InputRequiredResult:
    """Check (the operator's policy first), ask, and send once: the common path of every sending tool."""
    sender, guard = sending.sender, sending.guard
    recipients = tuple(a.addr_spec.lower() for a in outgoing.recipients.everyone)
    sending.asking.policy.check(recipients)
    sent_box = await sender.before_asking(outgoing, save_to_sent)
    request = await bound_to_the_store(request, sender.store_url)
    target = fingerprint(request.target)
    question = SendQuestion(sending.pool, sender, sending.asking.policy, sending.asking.clock, recipients, target)
    request = dataclasses.replace(request, details=question.details, second=question.second)
    decision = await guard.approve(ctx, request, confirm_token)
    channel = decision.channel
    if channel is None:
        count = len(outgoing.recipients.everyone)
        return decision.reply(
            lambda token: SendResult(
                status="confirmation_required", message_id=None, recipients=count, confirm_token=token
            )
        )
    approved = Approved(request.tool, decision.evidence(), channel.value, target)
    result = await sender.send(outgoing, sent_box, approved, original, draft, forwarded)
    return text_result(describe(request.summary, result), result)


class DraftSaved(BaseModel):
    mailbox: str = Field(description="The Drafts mailbox the draft was saved in.")
    id: str | None = Field(description="The draft's message id (null if the server did not report its UID).")
    flags: list[str] = Field(
        default_factory=list,
        description="The flags the saved draft has, as read back (\\Draft marks it a draft in mail clients; empty when "
        "the draft could not be found again).",
    )
    problems: list[str] = Field(
        default_factory=list, description="What could not be done after the draft was saved (it is saved)."
    )


def register_save_draft(mcp: MCPServer, composer: DraftComposer, store_url: str) -> None:
    pool = composer.pool

    @offer(
        mcp,
        "save_draft",
        description=(
            "Save a new draft message in the Drafts mailbox (flagged \\Draft) for a person to check, change and "
            "send (send_draft sends it after a person approves). With in_reply_to (an id), the draft answers that "
            "message as reply_to_message would: its recipients (reply_all: also To and Cc), 'Re:' subject and "
            "threading headers are computed, and the original is quoted below (quote); leave to, cc and subject out "
            "then. The account's signature is added as for send_message. Nothing is sent."
        ),
    )
    async def save_draft(
        body: DraftText,
        to: DraftTo = [],  # noqa: B006
        subject: DraftSubject = "",
        cc: DraftCc = [],  # noqa: B006
        in_reply_to: DraftInReplyTo = None,
        reply_all: DraftReplyAll = False,
        attachments: Attachments = (),
        body_format: BodyFormatArgument = "text",
        signature: SignatureArgument = True,
        quote: QuoteArgument = True,
    ) -> DraftSaved:
        attached = await files_of(pool, attachments, composer.files)
        new = await composer.compose(
            body, to, subject, cc, in_reply_to, reply_all, attached, Formatting(body_format, signature, quote)
        )
        saved = await pool.run(lambda c: append_draft(c, new.message, new.whole), retry=False)
        uid_part = (saved.uid,) if saved.uid else ()
        log_change("save_draft", saved.mailbox, uid_part)
        problems = await record_saved(store_url, pool.settings.account, saved, new.whole)
        flags = sorted(f.decode() for f in saved.flags)
        return DraftSaved(mailbox=saved.mailbox, id=saved_id(saved), flags=flags, problems=problems)


def register_update_draft(mcp: MCPServer, composer: DraftComposer, guard: Guard, store_url: str) -> None:
    updating = Updating(composer.pool, guard, store_url)

    @offer(
        mcp,
        UPDATE_TOOL,
        guard=guard,
        description=(
            "Replace a draft of the Drafts mailbox (by its id) with new content: the same arguments as save_draft, "
            "which describe the whole new draft (give every recipient, the subject and the body again). The new "
            "draft is saved, then the old one removed; the result gives the new id. A draft this server saved "
            "(save_draft, update_draft) and unchanged since is replaced at once; any other draft may be a person's "
            "work, so a person is asked first, as for a delete (a dialog where the client can show one, otherwise "
            "the first call returns a confirm_token and changes nothing). Nothing is sent."
        ),
    )
    async def update_draft(
        body: DraftText,
        ctx: Context,
        id: Annotated[str | None, Field(description="The id (imap.…) of the draft to replace.")] = None,
        to: DraftTo = [],  # noqa: B006
        subject: DraftSubject = "",
        cc: DraftCc = [],  # noqa: B006
        in_reply_to: DraftInReplyTo = None,
        reply_all: DraftReplyAll = False,
        attachments: Attachments = (),
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uid: DeprecatedUid = None,
        body_format: BodyFormatArgument = "text",
        signature: SignatureArgument = True,
        quote: QuoteArgument = True,
    ) -> Annotated[CallToolResult, DraftUpdated] | InputRequiredResult:
        target = resolve_one(id, mailbox, uid)
        attached = await files_of(composer.pool, attachments, composer.files)
        formatting = Formatting(body_format, signature, quote)
        new = await composer.compose(body, to, subject, cc, in_reply_to, reply_all, attached, formatting)
        return await update_in_place(updating, ctx, target, new, confirm_token)


def register(
    mcp: MCPServer,
    pool: ImapPool,
    guard: Guard,
    smtp: SmtpSettings | None,
    store_url: str,
    files: OutgoingFiles | None = None,
    asking: Asking | None = None,
) -> None:
    """Offer `save_draft`, and the sending tools when SMTP is configured (`SMTP_HOST`), under the operator's send
    policy (`asking`)."""
    files = files or OutgoingFiles()
    username = pool.settings.username
    known = smtp.sender if smtp is not None else username if "@" in username else None
    drafts_from = parse_address(known, "From") if known is not None else None
    own_addresses = frozenset(
        a.lower()
        for a in (drafts_from.addr_spec if drafts_from else "", username, smtp.username if smtp else "")
        if "@" in a
    )
    composer = DraftComposer(pool, drafts_from, own_addresses, files, smtp.signature if smtp else None)
    register_save_draft(mcp, composer, store_url)
    register_update_draft(mcp, composer, guard, store_url)
    if smtp is None:
        return
    sender = Sender(pool, smtp, store_url, files.max_message_bytes)
    sending = Sending(pool, sender, guard, asking or Asking())
    from_address = parse_address(smtp.sender, "From")

    def own_signature(wanted: bool) -> str | None:
        return smtp.signature if wanted and smtp is not None else None

    @offer(
        mcp,
        SEND_TOOL,
        guard=guard,
        description=(
            "Send a new email from the account (plain text, or Markdown or HTML with a text alternative), with the "
            "account's signature and attachments if given. A person is always asked to "
            "approve it first, in a dialog where the client can show one (recipients, subject, body length, each "
            "attachment's name and size); otherwise the first call returns a confirm_token and sends nothing. "
            "Changing recipients, subject, body or any attachment asks again." + POLICY_AND_REPEATING
        ),
    )
    async def send_message(
        to: To,
        subject: Annotated[str, Field(max_length=MAX_SUBJECT_LENGTH, description="The subject line, one line.")],
        body: Body,
        ctx: Context,
        cc: Addresses = (),
        bcc: Addresses = (),
        attachments: Attachments = (),
        save_to_sent: SaveToSent = True,
        confirm_token: ConfirmToken = None,
        body_format: BodyFormatArgument = "text",
        signature: SignatureArgument = True,
    ) -> Annotated[CallToolResult, SendResult] | InputRequiredResult:
        recipients, checked_subject, checked_body = (
            parse_recipients(to, cc, bcc),
            check_subject(subject),
            check_body(body),
        )
        draft = Draft(
            sender=from_address,
            recipients=recipients,
            subject=checked_subject,
            body=checked_body,
            attachments=await files_of(pool, attachments, files),
        ).with_body(await composed(checked_body, body_format, own_signature(signature)))
        request = send_request(SEND_TOOL, sender.account, draft)
        return await _send(sending, ctx, request, Outgoing.of(draft), save_to_sent, confirm_token)

    @offer(
        mcp,
        REPLY_TOOL,
        guard=guard,
        description=(
            "Reply to a message by its id: to its Reply-To (or From), and with reply_all also to its To and Cc, "
            "never to this account itself; subject 'Re: …' and threading headers are set, and the original is "
            "marked answered. The original's text is quoted below the reply and the account's signature (quote, "
            "signature). A person is always asked to approve it first, as for send_message." + POLICY_AND_REPEATING
        ),
    )
    async def reply_to_message(
        body: Body,
        ctx: Context,
        id: Annotated[
            str | None, Field(description="The id (imap.…) of the message to answer, as a tool returned it.")
        ] = None,
        reply_all: Annotated[bool, Field(description="true: also to the original's To and Cc.")] = False,
        attachments: Attachments = (),
        save_to_sent: SaveToSent = True,
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uid: DeprecatedUid = None,
        body_format: BodyFormatArgument = "text",
        signature: SignatureArgument = True,
        quote: QuoteArgument = True,
    ) -> Annotated[CallToolResult, SendResult] | InputRequiredResult:
        target = resolve_one(id, mailbox, uid)
        ref = await pool.run(lambda c: current_ref(c, target))
        original = await pool.run(lambda c: fetch_original(c, ref))
        draft = reply_draft(original, from_address, own_addresses, body, reply_all)
        quoted = await quote_of(pool, target, quote)
        draft = draft.with_body(await composed(draft.body, body_format, own_signature(signature), quoted))
        draft = dataclasses.replace(draft, attachments=await files_of(pool, attachments, files))
        request = send_request(REPLY_TOOL, sender.account, draft, ref)
        return await _send(sending, ctx, request, Outgoing.of(draft), save_to_sent, confirm_token, original=ref)

    @offer(
        mcp,
        "send_draft",
        guard=guard,
        description=(
            "Send a draft saved in the Drafts mailbox, by its id (search_messages in Drafts lists them, is_draft "
            "true), as it is saved: its recipients, subject, text and attachments (attachments adds more). A person is "
            "always asked to approve it first, as for send_message; a draft edited since (a new id) is asked about "
            "again. Once sent "
            "it leaves Drafts, a copy is filed in Sent, and the original of a reply (in INBOX) is marked answered."
            + POLICY_AND_REPEATING
        ),
    )
    async def send_draft(
        ctx: Context,
        id: Annotated[
            str | None, Field(description="The draft's id (imap.…), as save_draft or search_messages gave it.")
        ] = None,
        attachments: Attachments = (),
        save_to_sent: SaveToSent = True,
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uid: DeprecatedUid = None,
    ) -> Annotated[CallToolResult, SendResult] | InputRequiredResult:
        target = resolve_one(id, mailbox, uid)
        ref = await pool.run(lambda c: current_ref(c, target))
        try:
            saved = await pool.run(lambda c: read_draft(c, ref, from_address))
        except DraftGone:
            # gone after an earlier answer to this very question sent it? the ledger knows; else it is a refusal
            opened = guard.opened(ctx, confirm_token)
            earlier = None
            if opened is not None and opened.claim.pinned == ref.id:
                earlier = await sender.recorded("send_draft", opened.identity.encode())
            if earlier is None:
                raise
            return text_result(describe(f"send the draft {ref.id}", earlier), earlier)
        original = None
        if saved.in_reply_to is not None:
            in_reply_to = saved.in_reply_to
            original = await pool.run(lambda c: original_in_inbox(c, in_reply_to))
        added = await files_of(pool, attachments, files)

        def build(message_id: str, when: dt.datetime) -> EmailMessage:
            message = outgoing_copy(saved, from_address, message_id, when)
            for file in added:
                attach(message, file)
            return message

        outgoing = Outgoing(from_address, saved.recipients, build, tuple(f.payload for f in added))
        request = send_draft_request("send_draft", sender.account, saved, from_address.addr_spec, added)
        return await _send(sending, ctx, request, outgoing, save_to_sent, confirm_token, original=original, draft=ref)

    @offer(
        mcp,
        FORWARD_TOOL,
        guard=guard,
        description=(
            "Forward a message by its id to to/cc/bcc, with body as a note above it. mode inline: the original's "
            "text quoted below the note (header lines first), its attachments kept; mode attachment: the whole "
            "original attached as it is (message/rfc822). Subject 'Fwd: …'. A person is always asked to approve it "
            "first, as for send_message, bound to exactly this original; once sent the original is marked "
            "$Forwarded where the server keeps that keyword (the result says whether it did)." + POLICY_AND_REPEATING
        ),
    )
    async def forward_message(
        to: To,
        ctx: Context,
        id: Annotated[
            str | None, Field(description="The id (imap.…) of the message to forward, as a tool returned it.")
        ] = None,
        body: Annotated[
            str, Field(max_length=MAX_BODY_CHARS, description="A note above the forwarded message (see body_format).")
        ] = "",
        cc: Addresses = (),
        bcc: Addresses = (),
        mode: Annotated[
            Literal["inline", "attachment"],
            Field(description="inline: quote its text and keep its attachments; attachment: attach it whole."),
        ] = "inline",
        save_to_sent: SaveToSent = True,
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uid: DeprecatedUid = None,
        body_format: BodyFormatArgument = "text",
        signature: SignatureArgument = True,
    ) -> Annotated[CallToolResult, SendResult] | InputRequiredResult:
        recipients, note = parse_recipients(to, cc, bcc), check_body(body)
        target = resolve_one(id, mailbox, uid)
        original = await pool.run(InMailbox(target.mailbox, _reader(mode, target, files.max_message_bytes)))
        forwarded = await anyio.to_thread.run_sync(  # in a thread: rendering a large note takes seconds
            forward, from_address, recipients, note, original, mode, body_format, own_signature(signature)
        )
        outgoing = Outgoing(from_address, recipients, forwarded.build, forwarded.payloads)
        request = forward_request(FORWARD_TOOL, sender.account, forwarded, len(note))
        return await _send(sending, ctx, request, outgoing, save_to_sent, confirm_token, forwarded=original.ref)


def _reader(mode: Mode, target: MessageSelection, limit: int) -> Callable[[Session, Examined], Forwarded]:
    if mode == "inline":
        return lambda client, examined: read_inline(client, examined, target)
    return lambda client, examined: read_whole(client, examined, target, limit)
