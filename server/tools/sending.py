"""`send_message` and `reply_to_message`: mail leaves only after a person approved exactly it.

Both go through the one guard (`protocol.Guard`), bound to the exact recipients, subject and
body (`outgoing.approval`). The message is built before anyone is asked, so whatever cannot be
written as mail is refused then, never after the approval.

Sent exactly once, with no state on the server: the Message-ID is derived from the approval the
call carries (the verified content of the sealed dialog state or the confirm_token, which opens in
one spelling only; never from their text), so every replay of an approved call
(a client or gateway sending the same retry twice, even at the same time) builds the same message,
and the IMAP server's Sent mailbox decides which attempt sends it:

1. the attempt files its copy in Sent, read and marked `$ImapMcpSending`, and learns its UID
   (APPENDUID);
2. it searches Sent for the Message-ID: only the attempt whose copy has the lowest UID sends; any
   other removes exactly its own copy and answers `already_sent` (that copy is no longer marked)
   or `being_sent` (it still is: another attempt is sending it right now);
3. after SMTP took the message the mark is cleared (`save_to_sent=false`: the copy is removed);
   if SMTP failed the copy is removed, so a retry of the same approval can send it.

With `save_to_sent=false` concurrent replays are still excluded, but once the copy is removed a
later replay is recognised only if the provider files sent mail in Sent itself. An attempt
interrupted between 1 and 3 leaves a marked copy behind; replays of that approval answer
`being_sent` until it expires (twice IMAP_TIMEOUT), then the next replay sends it if the dead
attempt had not handed it to SMTP yet, and answers `already_sent` if it had (marked just before
SMTP). A send whose SMTP answer is lost after the whole message went out is `unconfirmed`: its
copy stays as the record, so no replay sends it again (`outgoing.sent_mailbox`). Without
UIDPLUS there is no APPENDUID, and the tools fall back to checking Sent before sending and filing
the copy after it: then a replay after the send is recognised, but concurrent replays are not
excluded. A pushed dialog (2025-11-25) carries nothing to replay: a repeated call asks the person
again.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Annotated, Literal, TypeVar

import anyio.to_thread
from imapclient import IMAPClient
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import BaseModel, Field

from imap_mcp.protocol import Channel, Decision, Guard
from imap_mcp.server.changes.claims import lifetime
from imap_mcp.server.config import SmtpSettings
from imap_mcp.server.imap.lookup import current_ref, resolve_one
from imap_mcp.server.imap.message_ids import MessageRef
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.logs import get_logger
from imap_mcp.server.outgoing.approval import send_request
from imap_mcp.server.outgoing.compose import (
    MAX_RECIPIENTS,
    MAX_SUBJECT_LENGTH,
    Draft,
    build_message,
    check_body,
    check_buildable,
    check_subject,
    message_id_for,
    parse_address,
    parse_recipients,
    wire_bytes,
)
from imap_mcp.server.outgoing.reply import reply_draft
from imap_mcp.server.outgoing.sent_mailbox import (
    SENDING,
    append_sent_copy,
    claim_sent_copy,
    contend_for_send,
    fetch_original,
    finish_sent_copy,
    mark_answered,
    record_unconfirmed,
    remove_sent_copy,
    sent_copy_exists,
)
from imap_mcp.server.outgoing.sent_mailbox import sent_mailbox as find_sent_mailbox
from imap_mcp.server.outgoing.smtp import SendFailed, SendOutcomeUnknown, send
from imap_mcp.server.tools.changes import ConfirmToken
from imap_mcp.server.tools.changes_common import changing, text_result
from imap_mcp.server.tools.deprecated import DeprecatedMailbox, DeprecatedUid
from imap_mcp.server.tools.errors import on_mailbox, refusals

T = TypeVar("T")
SEND_TOOL = "send_message"
REPLY_TOOL = "reply_to_message"
#: before a refusal that stopped a send before anything left
NOTHING_SENT = "Nothing was sent: "
#: said of a held-back send whose earlier attempt lost SMTP's answer
UNCONFIRMED_EARLIER = (
    "An earlier attempt handed it to the SMTP server but never got the answer, so it was probably sent; it is not "
    "sent again."
)
MAX_BODY_CHARS = 1_000_000

ADDRESSES = "Addresses, each 'alice@example.com' or 'Alice <alice@example.com>'."
To = Annotated[Sequence[str], Field(min_length=1, max_length=MAX_RECIPIENTS, description=ADDRESSES)]
Addresses = Annotated[Sequence[str], Field(max_length=MAX_RECIPIENTS, description=ADDRESSES)]
Body = Annotated[str, Field(max_length=MAX_BODY_CHARS, description="The message text (plain text, sent as written).")]
SaveToSent = Annotated[
    bool,
    Field(
        description="true: file a copy, marked read, in the Sent mailbox. Set false only when the provider files sent "
        "mail itself (Gmail, Microsoft 365): the Sent copy is also how a repeated call is recognised once the "
        "message has gone out."
    ),
]


class SendResult(BaseModel):
    status: Literal["sent", "unconfirmed", "already_sent", "being_sent", "confirmation_required"] = Field(
        description="sent: the message left now; unconfirmed: the whole message went to the SMTP server but its "
        "answer was lost, so it was probably sent and is not sent again by repeating the call; already_sent: this "
        "approved message had been sent before, nothing more was sent; being_sent: another attempt of this same "
        "approved call is sending it right now, this one sent nothing; confirmation_required: nothing was sent, "
        "repeat the call with confirm_token."
    )
    message_id: str | None = Field(description="The Message-ID header of the message (null until approved).")
    recipients: int = Field(description="How many addresses (to, cc and bcc) the message was for.")
    refused: dict[str, str] = Field(
        default_factory=dict, description="Recipients the SMTP server refused (address: its answer); the rest got it."
    )
    saved_to_sent: bool = Field(default=False, description="Whether a copy is in the Sent mailbox.")
    answered: bool | None = Field(default=None, description="For a reply: whether the original is marked answered.")
    problems: list[str] = Field(
        default_factory=list,
        description="Follow-up steps that failed without changing the status: filing or updating the Sent copy, "
        "marking the original answered, removing this call's own unsent copy.",
    )
    approved_by: Literal["dialog", "push", "token"] | None = Field(
        default=None,
        description="How a person approved it: a dialog (2026-07-28), a pushed dialog (2025-11-25), "
        "or the two-call token.",
    )
    confirm_token: str | None = Field(default=None, description="Pass this back to send (token path).")


async def _on_mailbox(pool: ImapPool, operation: Callable[[IMAPClient], T], retry: bool = True) -> T:
    """`on_mailbox` for a step before anything was sent: its refusal says so."""
    return await on_mailbox(pool, operation, retry=retry, prefix=NOTHING_SENT)


def _approval_evidence(decision: Decision) -> bytes:
    """What identifies this approval on every replay of the call: its verified content (never the text of the
    state or token, which could be spelled another way); a pushed dialog, which has no seal, is new each time."""
    return decision.identity.encode() if decision.identity else secrets.token_bytes(32)


@dataclass(frozen=True)
class _Attempt:
    """One attempt at sending an approved message: the message, built once, and where its copy goes."""

    message_id: str
    message: EmailMessage
    wire: bytes
    when: dt.datetime
    envelope: list[str]
    sent_box: str
    save_to_sent: bool
    channel: Channel

    def sent(self, refused: dict[str, str]) -> SendResult:
        return SendResult(
            status="sent",
            message_id=self.message_id,
            recipients=len(self.envelope),
            refused=refused,
            approved_by=self.channel.value,
        )

    def held_back(self, in_progress: bool, unconfirmed: bool = False) -> SendResult:
        """Another attempt sent this message, or is sending it right now: this one sends nothing."""
        return SendResult(
            status="being_sent" if in_progress else "already_sent",
            message_id=self.message_id,
            recipients=len(self.envelope),
            saved_to_sent=not in_progress,
            problems=[UNCONFIRMED_EARLIER] if unconfirmed else [],
        )

    def unconfirmed(self, recorded: bool) -> SendResult:
        return SendResult(
            status="unconfirmed",
            message_id=self.message_id,
            recipients=len(self.envelope),
            saved_to_sent=recorded,
            approved_by=self.channel.value,
        )


class Sender:
    """Everything the two tools share: ask, let the Sent mailbox pick the one attempt that sends, send, report."""

    def __init__(self, pool: ImapPool, smtp: SmtpSettings, guard: Guard) -> None:
        self.pool = pool
        self.smtp = smtp
        self.guard = guard
        self.claim_lifetime = lifetime(pool.settings.timeout)
        self.from_address = parse_address(smtp.sender, "From")
        self.own_addresses = frozenset(
            a.lower() for a in (self.from_address.addr_spec, pool.settings.username, smtp.username) if "@" in a
        )

    async def send(
        self,
        ctx: Context,
        tool: str,
        draft: Draft,
        original: MessageRef | None,
        save_to_sent: bool,
        confirm_token: str | None,
    ) -> CallToolResult | InputRequiredResult:
        sent_box = await _on_mailbox(self.pool, find_sent_mailbox)  # before asking: without it nothing is sent
        with refusals(NOTHING_SENT):
            # before asking: what cannot be written as mail is refused now (in a thread: linear in the body)
            await anyio.to_thread.run_sync(check_buildable, draft)
        request = send_request(tool, self.pool.settings.account, draft, original)
        decision = await self.guard.approve(ctx, request, confirm_token)
        count = len(draft.recipients.everyone)
        channel = decision.channel
        if channel is None:
            return decision.reply(
                lambda token: SendResult(
                    status="confirmation_required", message_id=None, recipients=count, confirm_token=token
                )
            )
        message_id = message_id_for(_approval_evidence(decision), self.from_address)
        attempt = await anyio.to_thread.run_sync(_attempt, draft, message_id, sent_box, save_to_sent, channel)
        result = await self._send_once(attempt)
        if result.status != "sent":
            get_logger().info("send held back: %s message_id=%s status=%s", request.tool, message_id, result.status)
            return text_result(_describe_held_back(request.summary, result, save_to_sent), result)
        if original is not None:
            result.answered = await self._mark_answered(original, result)
        get_logger().info(
            "sent: %s message_id=%s recipients=%d refused=%d approved_by=%s",
            request.tool,
            message_id,
            count,
            len(result.refused),
            channel.value,
        )
        return text_result(_describe(request.summary, result), result)

    async def _send_once(self, attempt: _Attempt) -> SendResult:
        """File the in-progress copy first; without UIDPLUS (no APPENDUID) check Sent, send, then file."""
        copy = await _on_mailbox(
            self.pool, lambda c: claim_sent_copy(c, attempt.sent_box, attempt.wire, attempt.when), retry=False
        )
        if copy is None:
            return await self._check_then_send(attempt)
        return await self._send_claimed(attempt, copy)

    async def _send_claimed(self, attempt: _Attempt, copy: MessageRef) -> SendResult:
        """Send only if `copy` is the earliest with its Message-ID; an attempt that sends nothing leaves no copy."""
        try:
            earliest = await _on_mailbox(
                self.pool, lambda c: contend_for_send(c, copy, attempt.message_id, self.claim_lifetime)
            )
            if earliest is None:
                raise ToolError(
                    f"Nothing was sent: the copy this call filed in {copy.mailbox!r} to mark the send in progress "
                    "disappeared (another mail client removed it?). Call again."
                )
            if earliest.uid != copy.uid:
                held_back = attempt.held_back(earliest.in_progress, earliest.unconfirmed)
                await self._withdraw(copy, held_back.problems)
                return held_back
            refused = await self._smtp(attempt)
        except ToolError as exc:
            problems: list[str] = []
            await self._withdraw(copy, problems)
            raise ToolError(" ".join([str(exc), *problems])) from None
        except SendOutcomeUnknown as exc:
            return await self._keep_as_unconfirmed(attempt, copy, exc)
        result = attempt.sent(refused)
        await self._settle(copy, attempt.save_to_sent, result)
        return result

    async def _check_then_send(self, attempt: _Attempt) -> SendResult:
        """Without UIDPLUS: a replay after the send is recognised, concurrent replays are not excluded."""
        if await _on_mailbox(self.pool, lambda c: sent_copy_exists(c, attempt.sent_box, attempt.message_id)):
            return attempt.held_back(in_progress=False)
        try:
            result = attempt.sent(await self._smtp(attempt))
        except SendOutcomeUnknown as exc:
            result = attempt.unconfirmed(recorded=False)
            result.problems.append(str(exc))
        if attempt.save_to_sent or result.status == "unconfirmed":  # the record keeps a replay from sending it
            try:
                await on_mailbox(
                    self.pool, lambda c: append_sent_copy(c, attempt.sent_box, attempt.wire, attempt.when), retry=False
                )
                result.saved_to_sent = True
            except ToolError as exc:
                result.problems.append(
                    f"The message was sent, but filing its copy in {attempt.sent_box!r} failed: {exc}"
                )
        return result

    async def _smtp(self, attempt: _Attempt) -> dict[str, str]:
        """SMTP's refusal as a `ToolError`; `SendOutcomeUnknown` as it is (the caller keeps the record)."""
        try:
            return await anyio.to_thread.run_sync(send, self.smtp, attempt.message, attempt.envelope)
        except SendOutcomeUnknown:
            raise
        except SendFailed as exc:
            raise ToolError(str(exc)) from None

    async def _keep_as_unconfirmed(self, attempt: _Attempt, copy: MessageRef, exc: SendOutcomeUnknown) -> SendResult:
        """SMTP's answer was lost after the whole message went out: keep the copy as the record (even with
        save_to_sent=false), so no replay sends it again."""
        result = attempt.unconfirmed(recorded=True)
        result.problems.append(str(exc))
        try:
            await on_mailbox(self.pool, lambda c: record_unconfirmed(c, copy))
        except ToolError as failure:
            result.saved_to_sent = False
            result.problems.append(
                f"Its copy in {copy.mailbox!r} (UID {copy.uid}) is still marked {SENDING.decode()} ({failure}); "
                "a repeated call answers being_sent until that mark expires, then already_sent."
            )
        return result

    async def _withdraw(self, copy: MessageRef, problems: list[str]) -> None:
        """Remove this attempt's own copy, which stands for nothing sent; a failure is noted, not raised."""
        try:
            await on_mailbox(self.pool, lambda c: remove_sent_copy(c, copy))
        except ToolError as exc:
            problems.append(
                f"This call's own copy in {copy.mailbox!r} (UID {copy.uid}, marked {SENDING.decode()}) could not be "
                f"removed ({exc}); delete it there, since it stands for nothing sent."
            )

    async def _settle(self, copy: MessageRef, save_to_sent: bool, result: SendResult) -> None:
        """After the send: keep the copy as the record with its mark cleared, or (`save_to_sent=false`) remove it."""
        try:
            if save_to_sent:
                await on_mailbox(self.pool, lambda c: finish_sent_copy(c, copy))
            else:
                await on_mailbox(self.pool, lambda c: remove_sent_copy(c, copy))
        except ToolError as exc:
            change = f"clearing its {SENDING.decode()} mark" if save_to_sent else "removing it (save_to_sent=false)"
            result.problems.append(
                f"The message was sent, but its copy in {copy.mailbox!r} (UID {copy.uid}) is left as it was: "
                f"{change} failed ({exc})."
            )
            return
        result.saved_to_sent = save_to_sent

    async def _mark_answered(self, original: MessageRef, result: SendResult) -> bool:
        try:
            await on_mailbox(self.pool, lambda c: mark_answered(c, original))
        except ToolError as exc:
            result.problems.append(f"The reply was sent, but marking the original as answered failed: {exc}")
            return False
        return True


def _attempt(draft: Draft, message_id: str, sent_box: str, save_to_sent: bool, channel: Channel) -> _Attempt:
    when = dt.datetime.now(dt.UTC)
    message = build_message(draft, message_id, when)
    return _Attempt(
        message_id=message_id,
        message=message,
        wire=wire_bytes(message),
        when=when,
        envelope=[a.addr_spec for a in draft.recipients.everyone],
        sent_box=sent_box,
        save_to_sent=save_to_sent,
        channel=channel,
    )


def _describe(summary: str, result: SendResult) -> str:
    text = f"Sent ({result.approved_by}): {summary}. Message-ID {result.message_id}."
    if result.refused:
        text += f" The SMTP server refused {len(result.refused)} recipient(s): " + ", ".join(result.refused) + "."
    if result.saved_to_sent:
        text += " A copy is in the Sent mailbox."
    return " ".join([text, *result.problems])


def _describe_held_back(summary: str, result: SendResult, save_to_sent: bool) -> str:
    if result.status == "unconfirmed":
        text = f"Probably sent, but the SMTP server's answer was lost: {summary}."
    elif result.status == "already_sent":
        text = f"Already sent earlier, nothing more was sent: {summary}."
    elif save_to_sent:
        text = (
            f"Another attempt of this same approved call is sending it right now; this one sent nothing: {summary}. "
            "Call again to learn the outcome: it answers already_sent once the message is out, and sends it if "
            "that attempt failed."
        )
    else:
        text = (
            f"Another attempt of this same approved call is sending it right now; this one sent nothing: {summary}. "
            "Do not call again to check: with save_to_sent=false a later call cannot tell that it went out unless "
            "the provider files sent mail in Sent itself."
        )
    return " ".join([text, *result.problems])


def register(mcp: MCPServer, pool: ImapPool, guard: Guard, smtp: SmtpSettings | None) -> None:
    """Offer the sending tools, only when SMTP is configured (`SMTP_HOST`)."""
    if smtp is None:
        return
    sender = Sender(pool, smtp, guard)

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
                sender=sender.from_address,
                recipients=parse_recipients(to, cc, bcc),
                subject=check_subject(subject),
                body=check_body(body),
            )
        return await sender.send(ctx, SEND_TOOL, draft, None, save_to_sent, confirm_token)

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
        ref = await _on_mailbox(pool, lambda c: current_ref(c, target))
        original = await _on_mailbox(pool, lambda c: fetch_original(c, ref))
        with refusals(NOTHING_SENT):
            draft = reply_draft(original, sender.from_address, sender.own_addresses, body, reply_all)
        return await sender.send(ctx, REPLY_TOOL, draft, ref, save_to_sent, confirm_token)
