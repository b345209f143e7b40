"""Sending an approved message exactly once: the approval ledger decides, SMTP sends, Sent keeps a copy.

Every replay of an approved call (a client or gateway retrying, two replicas answering the same
retry, a confirm_token used again) carries the same approval, hence the same ledger key and the
same Message-ID (`compose.message_id_for`). The ledger (`store.ledger`, in `IMAP_MCP_STORE`) lets
exactly one attempt hand the message to SMTP:

1. `begin`: the first attempt holds the approval; any other finds the row and sends nothing —
   `already_sent` once it is done, `being_sent` while an attempt is at it.
2. `handing_over`, written just before SMTP: from then on the message may have left, so no attempt
   ever sends it again, even when the one that wrote it died (it is then reported as probably sent).
3. `done` after SMTP took it, `unconfirmed` when SMTP's answer was lost after the whole message went
   out; a send SMTP refused releases the row, so a replay of the same approval sends it.

Once SMTP may have the message, nothing later turns the result into a failure: a store that cannot
record the outcome, a Sent copy refused, a lost IMAP connection, even an error no layer expected are
each a line of `problems` beside `sent` (or `unconfirmed`), saying what a replay of the approval does.

No decision rests on the mailbox: a keyword can be set by any tool caller or mail client, and a
server may take one and keep nothing. The Sent copy is filed after the send, for the person, and
what the server kept of it (`\\Seen`) is read back. A pushed dialog (2025-11-25) carries nothing to
replay: a repeated call asks the person again.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Literal, TypeVar

import anyio.to_thread
from pydantic import BaseModel, Field

from imap_mcp.protocol.eras import Approver

from ..config import DEFAULT_MAX_MESSAGE_BYTES, SmtpSettings
from ..errors import ImapMcpError, OutgoingError
from ..imap.message_ids import MessageRef
from ..imap.pool import ImapPool
from ..logs import get_logger
from ..store.ledger import Begun, Entry, Ledger, approval_key, begin_at, ledger_at, running_lifetime
from .compose import (
    HEADER_PARSE_ERRORS,
    Draft,
    Recipients,
    build_message,
    message_id_for,
    unbuildable,
)
from .drafts import remove_draft
from .forward import FORWARDED
from .sent_mailbox import ANSWERED, SEEN, file_sent_copy, mark_original, sent_mailbox
from .smtp import SendFailed, SendOutcomeUnknown, send, size_limit
from .wire import Payload, Wire

_T = TypeVar("_T")
UNCONFIRMED_EARLIER = (
    "An earlier attempt handed it to the SMTP server but never got the answer, so it was probably sent; it is not "
    "sent again."
)
STOPPED_EARLIER = (
    "An earlier attempt began handing it to the SMTP server and stopped before it could record the outcome, so it "
    "may have been sent; it is not sent again."
)


class SendResult(BaseModel):
    status: Literal["sent", "unconfirmed", "already_sent", "being_sent", "confirmation_required"] = Field(
        description="sent: the message left now; unconfirmed: the whole message went to the SMTP server but its "
        "answer was lost, so it was probably sent and is not sent again by repeating the call; already_sent: this "
        "approved message had been sent before (or may have been: see problems), nothing more was sent; "
        "being_sent: another attempt of this same approved call is sending it right now, this one sent nothing; "
        "confirmation_required: nothing was sent, repeat the call with confirm_token."
    )
    message_id: str | None = Field(description="The Message-ID header of the message (null until approved).")
    recipients: int = Field(description="How many addresses (to, cc and bcc) the message was for.")
    refused: dict[str, str] = Field(
        default_factory=dict, description="Recipients the SMTP server refused (address: its answer); the rest got it."
    )
    saved_to_sent: bool = Field(
        default=False,
        description="Whether this call filed a copy in the Sent mailbox and the server kept it marked read.",
    )
    answered: bool | None = Field(
        default=None, description="For a reply: whether the server kept the original marked answered."
    )
    forwarded: bool | None = Field(
        default=None,
        description="For a forward: whether the server kept the original marked $Forwarded (a server may keep no "
        "keywords).",
    )
    draft_removed: bool | None = Field(
        default=None, description="For a draft sent: whether it left the Drafts mailbox."
    )
    problems: list[str] = Field(
        default_factory=list,
        description="Follow-up steps that failed without changing the status: filing the Sent copy, marking the "
        "original answered or forwarded, recording the outcome.",
    )
    approved_by: Approver | None = Field(
        default=None,
        description="How a person approved it: a dialog (2026-07-28), a pushed dialog (2025-11-25), "
        "or the two-call token.",
    )
    confirm_token: str | None = Field(default=None, description="Pass this back to send (token path).")


@dataclass(frozen=True)
class Approved:
    """What the guard said yes to, as the sender needs it: which tool, how, and the approval's evidence (the
    same bytes on every replay of one approval; fresh bytes for a pushed dialog)."""

    tool: str
    evidence: bytes
    approved_by: Approver
    #: the fingerprint of the approved target, recorded with the outcome so that the next question about an
    #: identical message can say when this one went out (`Sender.identical_sent`)
    target: str = ""


@dataclass(frozen=True)
class Outgoing:
    """A message ready to go but for what each approval gives it: `build(message_id, when)` writes it, each of
    `payloads` (its attachments' bytes) standing in it as a placeholder (`wire.Wire`). Built before anyone is asked,
    so what cannot be written as mail is refused then (`check`)."""

    sender: Address
    recipients: Recipients
    build: Callable[[str, dt.datetime], EmailMessage]
    payloads: tuple[Payload, ...] = ()

    @classmethod
    def of(cls, draft: Draft) -> Outgoing:
        return cls(
            draft.sender,
            draft.recipients,
            lambda message_id, when: build_message(draft, message_id, when),
            tuple(file.payload for file in draft.attachments),
        )

    def check(self) -> int:
        """Build and serialise it once with a throwaway Message-ID: its size in bytes, or `OutgoingError` for what
        mail cannot carry."""
        try:
            return Wire(self.build("<check.imap-mcp@imap-mcp.invalid>", dt.datetime.now(dt.UTC)), self.payloads).size
        except HEADER_PARSE_ERRORS as exc:
            raise unbuildable(exc) from None


@dataclass(frozen=True)
class _Attempt:
    """The message of one approval, built once (its attachments' bytes streamed in when written), and where its
    copy goes (`sent_box` None: no copy)."""

    message_id: str
    message: EmailMessage
    payloads: tuple[Payload, ...]
    when: dt.datetime
    envelope: list[str]
    sent_box: str | None


@dataclass
class Sender:
    """Sends approved drafts for one account through its pool, its SMTP settings and the ledger in `store_url`."""

    pool: ImapPool
    smtp: SmtpSettings
    store_url: str
    #: SMTP_MAX_MESSAGE_BYTES: the largest message sent, attachments included
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    running_lifetime: float = field(init=False)

    def __post_init__(self) -> None:
        self.running_lifetime = running_lifetime(self.pool.settings.timeout)

    @property
    def account(self) -> str:
        return self.pool.settings.account

    async def before_asking(self, outgoing: Outgoing, save_to_sent: bool) -> str | None:
        """Everything of the message that can refuse a send before a person is asked: the Sent mailbox (when a copy
        is wanted; its name is returned), whether the message can be written as mail, and its size (at most
        SMTP_MAX_MESSAGE_BYTES and, with attachments, what the SMTP server says it takes). The ledger's store is
        tried where the guard asks (`guard.bound_to_the_store`)."""
        sent_box = await self.pool.run(sent_mailbox) if save_to_sent else None
        size = await anyio.to_thread.run_sync(outgoing.check)  # in a thread: linear in the body
        self._check_size(size, self.max_message_bytes, "SMTP_MAX_MESSAGE_BYTES")
        if outgoing.payloads:
            server_limit = await anyio.to_thread.run_sync(size_limit, self.smtp)
            if server_limit is not None:
                self._check_size(size, server_limit, f"the SMTP server {self.smtp.host}'s SIZE")
        return sent_box

    @staticmethod
    def _check_size(size: int, limit: int, named: str) -> None:
        if size > limit:
            raise OutgoingError(
                f"The message would be {size} bytes with its attachments, more than the {limit} allowed ({named}). "
                "Send fewer or smaller attachments, or split them over several messages."
            )

    def _ledger(self) -> Ledger:
        return ledger_at(self.store_url)

    async def send(
        self,
        outgoing: Outgoing,
        sent_box: str | None,
        approved: Approved,
        original: MessageRef | None = None,
        draft: MessageRef | None = None,
        forwarded: MessageRef | None = None,
    ) -> SendResult:
        """Send `outgoing` once for this approval, however often and wherever the approval is replayed; then file
        its copy in `sent_box`, mark `original` answered (a reply) or `forwarded` $Forwarded (a forward), and take
        `draft` out of Drafts (a draft sent)."""
        message_id = message_id_for(approved.evidence, outgoing.sender)
        key = approval_key(self.account, approved.tool, approved.evidence.hex())
        ledger, begun = await anyio.to_thread.run_sync(
            begin_at, self.store_url, key, self.account, approved.tool, self.running_lifetime
        )
        if not begun.owned:
            return self._held_back(begun, message_id, len(outgoing.recipients.everyone))
        recorded = {"target": approved.target, "approved_by": approved.approved_by}
        holder = begun.holder
        assert holder is not None
        try:  # nothing has left yet: whatever fails here lets a replay of the approval send it
            attempt = await anyio.to_thread.run_sync(_attempt, outgoing, message_id, sent_box)
            handing_over = await anyio.to_thread.run_sync(ledger.advance, key, holder, "handing_over")
        except Exception:
            await self._release(ledger, key, holder)
            raise
        if not handing_over:  # another attempt took over a row it judged dead: it sends
            return SendResult(status="being_sent", message_id=message_id, recipients=len(attempt.envelope))
        result = await self._hand_over(ledger, key, holder, attempt, approved.approved_by, recorded)
        if attempt.sent_box is not None:
            await _after_sending(self._file_copy(attempt, attempt.sent_box, result), "filing the Sent copy", result)
        if original is not None and result.status == "sent":
            marking = self._mark_original(original, ANSWERED, result)
            result.answered = await _after_sending(marking, "marking the original answered", result)
        if forwarded is not None and result.status == "sent":
            marking = self._mark_original(forwarded, FORWARDED, result)
            result.forwarded = await _after_sending(marking, "marking the original $Forwarded", result)
        if draft is not None and result.status in ("sent", "unconfirmed"):
            removing = self._remove_draft(draft, result)
            result.draft_removed = await _after_sending(removing, "removing the draft", result)
        get_logger().info(
            "sent: %s message_id=%s status=%s recipients=%d refused=%d approved_by=%s",
            approved.tool,
            message_id,
            result.status,
            len(attempt.envelope),
            len(result.refused),
            approved.approved_by,
        )
        return result

    async def _hand_over(
        self, ledger: Ledger, key: str, holder: str, attempt: _Attempt, approved_by: Approver, recorded: dict[str, str]
    ) -> SendResult:
        """SMTP, then the ledger's record of the outcome; a refusal releases the approval for a retry."""
        try:
            refused = await anyio.to_thread.run_sync(
                send, self.smtp, attempt.message, attempt.envelope, attempt.payloads
            )
        except SendOutcomeUnknown as exc:
            result = SendResult(
                status="unconfirmed",
                message_id=attempt.message_id,
                recipients=len(attempt.envelope),
                approved_by=approved_by,
                problems=[str(exc)],
            )
            await self._record(ledger, key, holder, "unconfirmed", result, recorded)
            return result
        except SendFailed:
            await self._release(ledger, key, holder)
            raise
        except Exception as exc:  # no layer expected it, and the message may have begun to leave: never resent
            get_logger().exception("sending %s raised an unexpected %s", attempt.message_id, type(exc).__name__)
            result = SendResult(
                status="unconfirmed",
                message_id=attempt.message_id,
                recipients=len(attempt.envelope),
                approved_by=approved_by,
                problems=[
                    f"Handing the message to the SMTP server failed inside imap-mcp ({type(exc).__name__}: the "
                    "server's log has the details) after it had begun, so it may have been sent; repeating the "
                    "call with the same approval does not send it again."
                ],
            )
            await self._record(ledger, key, holder, "unconfirmed", result, recorded)
            return result
        result = SendResult(
            status="sent",
            message_id=attempt.message_id,
            recipients=len(attempt.envelope),
            refused=refused,
            approved_by=approved_by,
        )
        await self._record(ledger, key, holder, "done", result, recorded)
        return result

    async def _record(
        self,
        ledger: Ledger,
        key: str,
        holder: str,
        state: Literal["done", "unconfirmed"],
        result: SendResult,
        recorded: dict[str, str],
    ) -> None:
        """Record the outcome (and `recorded`: the target and who approved it); a store failure now is a problem to
        report, never a reason to say nothing was sent (the row stays `handing_over`, so no replay sends it again)."""
        outcome = {"message_id": result.message_id, "status": result.status, **recorded}
        try:
            await anyio.to_thread.run_sync(ledger.advance, key, holder, state, outcome)
        except ImapMcpError as exc:
            sent = "; do not ask for a new approval to send it again: it was sent" if state == "done" else ""
            result.problems.append(
                f"The store could not record the outcome ({exc}) It still holds this approval as handed to the "
                f"SMTP server, so repeating the call with the same approval sends nothing more{sent}."
            )

    @staticmethod
    async def _release(ledger: Ledger, key: str, holder: str) -> None:
        """Nothing left: let a replay of the approval send it."""
        await anyio.to_thread.run_sync(ledger.release_if_possible, key, holder)

    async def identical_sent(self, target: str, within: float) -> Entry | None:
        """The newest send of `target` (a fingerprint) from this account in the last `within` seconds, from the
        ledger; None when there is none, or the store cannot say (a question is never held up by it)."""
        try:
            return await anyio.to_thread.run_sync(lambda: self._ledger().latest_with(self.account, target, within))
        except ImapMcpError as exc:
            get_logger().warning("approval ledger: looking for an identical earlier send failed (%s)", exc)
            return None

    async def recorded(self, tool: str, evidence: bytes) -> SendResult | None:
        """What the ledger says of an approval whose message can no longer be rebuilt (a draft sent, so gone from
        Drafts): held back as any replay is, or None when the ledger has no row for it."""
        key = approval_key(self.account, tool, evidence.hex())
        entry = await anyio.to_thread.run_sync(lambda: self._ledger().entry(key))
        if entry is None:
            return None
        return self._held_back(Begun(None, entry), None, 0)

    def _held_back(self, begun: Begun, message_id: str | None, recipients: int) -> SendResult:
        """Another attempt of this approval sent the message, or is sending it: this one sends nothing."""
        entry = begun.entry
        assert entry is not None
        problems = _earlier_problem(entry, self._stopped_after())
        in_progress = entry.state == "running" or (entry.state == "handing_over" and not problems)
        return SendResult(
            status="being_sent" if in_progress else "already_sent",
            message_id=message_id,
            recipients=recipients,
            problems=problems,
        )

    def _stopped_after(self) -> float:
        """How old a `handing_over` row must be before its attempt surely stopped: the claim's lifetime and
        twice SMTP's timeout, the longest a hand-over can take."""
        return self.running_lifetime + 2 * self.smtp.timeout

    async def _file_copy(self, attempt: _Attempt, sent_box: str, result: SendResult) -> None:
        """File the copy in Sent after the send, read back; a failure is a problem, not a failed send."""
        try:
            whole = await anyio.to_thread.run_sync(Wire(attempt.message, attempt.payloads).whole)
            filed = await self.pool.run(
                lambda c: file_sent_copy(c, sent_box, whole, attempt.when, attempt.message_id), retry=False
            )
        except ImapMcpError as exc:
            result.problems.append(f"The message was sent, but filing its copy in {sent_box!r} failed: {exc}")
            return
        result.saved_to_sent = filed.uid is not None and filed.kept(SEEN)
        if filed.uid is None:
            result.problems.append(f"The copy was filed in {sent_box!r}, but the server did not say where.")
        elif not filed.kept(SEEN):
            result.problems.append(f"The copy in {sent_box!r} was filed, but the server did not keep it marked read.")

    async def _remove_draft(self, draft: MessageRef, result: SendResult) -> bool:
        """The sent draft leaves Drafts; where it cannot (no UIDPLUS, or a failure) the result says so."""
        try:
            removed = await self.pool.run(lambda c: remove_draft(c, draft))
        except ImapMcpError as exc:
            result.problems.append(f"The draft was sent, but removing it from {draft.mailbox!r} failed: {exc}")
            return False
        if not removed:
            result.problems.append(
                f"The draft was sent and stays in {draft.mailbox!r}: the server cannot remove exactly one message "
                "(it lacks UIDPLUS); delete it there."
            )
        return removed

    async def _mark_original(self, original: MessageRef, flag: bytes, result: SendResult) -> bool:
        """Mark the original of a reply answered, of a forward $Forwarded; the result says when it did not stay."""
        what = "the reply" if flag == ANSWERED else "the forward"
        marked = "answered" if flag == ANSWERED else "$Forwarded (the keyword mail clients show as forwarded)"
        try:
            kept = await self.pool.run(lambda c: mark_original(c, original, flag))
        except ImapMcpError as exc:
            keywords = "" if flag == ANSWERED else " (a server may take no keywords)"
            result.problems.append(
                f"{what.capitalize()} was sent, but marking the original {marked} failed{keywords}: {exc}"
            )
            return False
        if not kept:
            result.problems.append(
                f"{what.capitalize()} was sent, but the server did not keep the original marked {marked}"
                + ("." if flag == ANSWERED else ": this mailbox keeps no such keyword.")
            )
        return kept


async def _after_sending(step: Awaitable[_T], what: str, result: SendResult) -> _T | None:
    """A step after the message left (each reports its own expected failures as problems): an error no layer
    expected becomes one more problem, logged with its traceback, never an internal error over a message sent."""
    try:
        return await step
    except Exception as exc:
        get_logger().exception(
            "%s after sending %s raised an unexpected %s", what, result.message_id, type(exc).__name__
        )
        result.problems.append(
            f"The message was {'sent' if result.status == 'sent' else 'handed to the SMTP server'}, but {what} "
            f"failed inside imap-mcp ({type(exc).__name__}: the server's log has the details)."
        )
        return None


def _earlier_problem(entry: Entry, stopped_after: float) -> list[str]:
    """What a held-back call says of the earlier attempt, when it may not have been a clean send."""
    if entry.state == "unconfirmed":
        return [UNCONFIRMED_EARLIER]
    if entry.state == "handing_over" and entry.age(time.time()) > stopped_after:
        return [STOPPED_EARLIER]
    return []


def _attempt(outgoing: Outgoing, message_id: str, sent_box: str | None) -> _Attempt:
    when = dt.datetime.now(dt.UTC)
    message = outgoing.build(message_id, when)
    return _Attempt(
        message_id=message_id,
        message=message,
        payloads=outgoing.payloads,
        when=when,
        envelope=[a.addr_spec for a in outgoing.recipients.everyone],
        sent_box=sent_box,
    )


def describe(summary: str, result: SendResult) -> str:
    """The text of a send's result, written for the model."""
    if result.status == "sent":
        text = f"Sent ({result.approved_by}): {summary}. Message-ID {result.message_id}."
        if result.refused:
            text += f" The SMTP server refused {len(result.refused)} recipient(s): " + ", ".join(result.refused) + "."
        if result.saved_to_sent:
            text += " A copy is in the Sent mailbox."
    elif result.status == "unconfirmed":
        text = f"Probably sent, but the SMTP server's answer was lost: {summary}."
    elif result.status == "already_sent":
        text = f"Already sent earlier, nothing more was sent: {summary}."
    else:
        text = (
            f"Another attempt of this same approved call is sending it right now; this one sent nothing: {summary}. "
            "Call again to learn the outcome: it answers already_sent once the message is out; it sends it only "
            "if that attempt stopped before handing the message to the SMTP server (once handed over, never again)."
        )
    return " ".join([text, *result.problems])
