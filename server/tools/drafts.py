"""What `save_draft` and `update_draft` share, and `update_draft`'s path (`outgoing.draft_update`).

Both write a draft from the same arguments (`DraftComposer`: a new draft, or a reply to a message). Every draft
they save is recorded in the store (`store.drafts`), so update_draft knows it for this server's own;
a store that cannot record it only means a person is asked before that draft is replaced, so a saved draft is
never reported as a failure for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Annotated, Literal

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import BaseModel, Field

from imap_mcp.protocol import Guard
from imap_mcp.protocol.eras import Approver

from ..config import OutgoingFiles
from ..errors import ArgumentError, MailboxError, OutgoingError
from ..guard import bound_to_the_store
from ..imap.lookup import MessageSelection, current_ref, resolve_one
from ..imap.message_ids import MessageRef, encode_id
from ..imap.pool import ImapPool
from ..logs import get_logger
from ..outgoing.compose import check_body
from ..outgoing.draft_update import NewDraft, OldDraft, read_old_draft, update_request
from ..outgoing.drafts import (
    SavedDraft,
    append_draft,
    bytes_digest,
    draft_message,
    new_recipients,
    remove_draft,
)
from ..outgoing.formatting import BodyFormat, composed
from ..outgoing.quoting import quote_of
from ..outgoing.reply import reply_draft
from ..outgoing.sent_mailbox import fetch_original
from ..outgoing.wire import FileToSend, Wire
from ..store.database import StoreError
from ..store.drafts import DraftPlace, forget_draft, record_draft, recorded_digest
from ..store.ledger import Entry, Ledger, approval_key, begin_at, running_lifetime
from .results import log_change, text_result

UPDATE_TOOL = "update_draft"


def saved_id(saved: SavedDraft) -> str | None:
    """The id of a draft as saved, or None when the server did not say where it went."""
    if saved.uid is None or saved.uidvalidity is None:
        return None
    return encode_id(MessageRef(saved.mailbox, saved.uidvalidity, saved.uid))


async def record_saved(store_url: str, account: str, saved: SavedDraft, whole: bytes) -> list[str]:
    """Record the draft `saved` (APPENDed as `whole`) as this server's own; what could not be, as problems."""
    if saved.uid is None or saved.uidvalidity is None:
        return [
            "The server did not say which UID the draft got, so it is not recorded as this server's own: "
            "update_draft will ask a person before replacing it."
        ]
    place = DraftPlace(account, saved.mailbox, saved.uidvalidity, saved.uid)
    try:
        await anyio.to_thread.run_sync(record_draft, store_url, place, bytes_digest(whole))
    except StoreError as exc:
        return [
            f"The draft is saved, but the store could not record it as this server's own ({exc}): update_draft "
            "will ask a person before replacing it."
        ]
    return []


DraftText = Annotated[str, Field(max_length=1_000_000, description="Plain text.")]
DraftTo = Annotated[list[str], Field(max_length=100, description="Recipient addresses.")]
DraftSubject = Annotated[str, Field(max_length=998, description="One line.")]
DraftCc = Annotated[list[str], Field(max_length=100, description="Copy addresses.")]
DraftInReplyTo = Annotated[str | None, Field(description="The id (imap.…) of a message this draft answers.")]
DraftReplyAll = Annotated[bool, Field(description="With in_reply_to: also to the original's To and Cc.")]


@dataclass(frozen=True)
class Formatting:
    """How a draft's body is written: its format (text, markdown, html), with the account's signature or not,
    quoting the original of a reply or not."""

    body_format: BodyFormat = "text"
    signature: bool = True
    quote: bool = True


@dataclass(frozen=True)
class DraftComposer:
    """What a draft is written with: the account's pool, its sending address (if known) and own addresses (left out
    of a reply's recipients), and the operator's settings for attached files."""

    pool: ImapPool
    from_address: Address | None
    own_addresses: frozenset[str]
    files: OutgoingFiles
    #: the account's signature (SMTP_SIGNATURE), added below the body unless a call leaves it out
    signature: str | None = None

    async def compose(
        self,
        body: str,
        to: Sequence[str],
        subject: str,
        cc: Sequence[str],
        in_reply_to: str | None,
        reply_all: bool,
        attached: tuple[FileToSend, ...],
        formatting: Formatting,
    ) -> NewDraft:
        """The draft save_draft's arguments describe (a new one, or a reply to `in_reply_to`, quoting it unless
        `formatting` says not to), written as `formatting` says, with its bytes."""
        pool, from_address = self.pool, self.from_address
        added = self.signature if formatting.signature else None
        if in_reply_to is None:
            recipients, answers = new_recipients(list(to), list(cc)), None
            written = await composed(check_body(body), formatting.body_format, added)
            body, html = written.text, written.html
            message = draft_message(from_address, recipients, subject, body, files=attached, html=html)
        else:
            if to or cc or subject:
                raise ArgumentError(
                    "With in_reply_to the draft's recipients and subject are those of a reply to that message: "
                    "leave to, cc and subject out (change them in the draft later if needed)."
                )
            if from_address is None:
                raise ArgumentError(
                    "A reply draft needs this account's address, which is not known: set SMTP_FROM (or use a login "
                    "name that is an address)."
                )
            target = resolve_one(in_reply_to, None, None)
            ref = await pool.run(lambda c: current_ref(c, target))
            original = await pool.run(lambda c: fetch_original(c, ref))
            reply = reply_draft(original, from_address, self.own_addresses, body, reply_all)
            quoted = await quote_of(pool, target, formatting.quote)
            reply = reply.with_body(await composed(reply.body, formatting.body_format, added, quoted))
            recipients, subject, body, answers = reply.recipients, reply.subject, reply.body, reply.in_reply_to
            html = reply.html
            message = draft_message(
                from_address, recipients, subject, body, reply.in_reply_to, reply.references, attached, html
            )
        whole = await anyio.to_thread.run_sync(_draft_bytes, message, attached, self.files.max_message_bytes)
        return NewDraft(message, whole, recipients, subject, body, attached, answers, html)


def _draft_bytes(message: EmailMessage, attached: Sequence[FileToSend], limit: int) -> bytes:
    wire = Wire(message, [f.payload for f in attached])
    if wire.size > limit:
        raise OutgoingError(
            f"The draft would be {wire.size} bytes with its attachments, more than the {limit} a message may have "
            "(SMTP_MAX_MESSAGE_BYTES). Attach fewer or smaller files."
        )
    return wire.whole()


class DraftUpdated(BaseModel):
    status: Literal["updated", "confirmation_required", "in_progress", "already_updated"] = Field(
        description="updated: the new draft is saved (see old_removed for the old one); confirmation_required: "
        "nothing changed yet, repeat the call with confirm_token; in_progress: another attempt of this same "
        "approval is replacing the draft now, this call changed nothing; already_updated: this approval already "
        "replaced the draft (id: the new draft), this call changed nothing."
    )
    mailbox: str = Field(description="The Drafts mailbox.")
    id: str | None = Field(
        description="The new draft's id (null if the server did not report its UID, or nothing was saved yet)."
    )
    replaced_id: str = Field(description="The id of the draft replaced.")
    old_removed: bool = Field(
        description="true: the old draft is gone from Drafts; false: it is still there (see problems), or nothing "
        "ran yet."
    )
    flags: list[str] = Field(default_factory=list, description="The flags the new draft has, as read back.")
    approved_by: Approver | None = Field(
        default=None,
        description="How a person approved the replacement; null when none was needed (a draft this server saved, "
        "unchanged since).",
    )
    confirm_token: str | None = Field(default=None, description="Pass this back to replace the draft (token path).")
    problems: list[str] = Field(
        default_factory=list, description="What could not be done after the new draft was saved (it is saved)."
    )


@dataclass(frozen=True)
class Updating:
    """What update_draft runs with: the account's pool, the guard, and the store that records drafts saved."""

    pool: ImapPool
    guard: Guard
    store_url: str

    @property
    def account(self) -> str:
        return self.pool.settings.account


async def update_in_place(
    updating: Updating, ctx: Context, target: MessageSelection, new: NewDraft, confirm_token: str | None
) -> CallToolResult | InputRequiredResult:
    """Replace the draft `target` by `new`: at once when this server saved it and its bytes are as recorded, else
    after a person approved exactly this replacement (`outgoing.draft_update`)."""
    pool = updating.pool
    ref = await pool.run(lambda c: current_ref(c, target))
    old = await pool.run(lambda c: read_old_draft(c, ref))
    place = DraftPlace(updating.account, ref.mailbox, ref.uidvalidity, ref.uid)
    recorded = await anyio.to_thread.run_sync(recorded_digest, updating.store_url, place)
    approved_by: Approver | None = None
    held: HeldReplacement | None = None
    if recorded != old.digest:
        request = update_request(UPDATE_TOOL, updating.account, old, new, changed_since_saved=recorded is not None)
        request = await bound_to_the_store(request, updating.store_url)
        decision = await updating.guard.approve(ctx, request, confirm_token)
        if decision.channel is None:
            return decision.reply(lambda token: _pending(old, token))
        channel: Approver = decision.channel.value
        approved_by = channel
        begun = await _hold(updating, decision.evidence())
        if isinstance(begun, Entry):
            return _held_back(old, begun, channel)
        held = begun
    try:
        saved = await pool.run(lambda c: append_draft(c, new.message, new.whole), retry=False)
    except Exception:
        if held is not None:  # nothing was saved: a replay of the approval may run at once
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(held.ledger.release_if_possible, held.key, held.holder)
        raise
    problems = await record_saved(updating.store_url, updating.account, saved, new.whole)
    removed = await _removed(updating, old, place, problems)
    log_change(UPDATE_TOOL, saved.mailbox, (saved.uid,) if saved.uid else (), approved_by or "not needed")
    outcome = DraftUpdated(
        status="updated",
        mailbox=saved.mailbox,
        id=saved_id(saved),
        replaced_id=ref.id,
        old_removed=removed,
        flags=sorted(f.decode() for f in saved.flags),
        approved_by=approved_by,
        problems=problems,
    )
    if held is not None:
        await _done(held, outcome)
    return text_result(_describe(outcome), outcome)


@dataclass(frozen=True)
class HeldReplacement:
    """This attempt holds an approved replacement in the approval ledger (`store.ledger`): it runs it, once."""

    ledger: Ledger
    key: str
    holder: str


async def _hold(updating: Updating, evidence: bytes) -> HeldReplacement | Entry:
    """Hold the approval `evidence` names for this attempt, or the ledger's row of another attempt of it (running,
    or done), which then decides: concurrent answers to one approval never save two drafts."""
    key = approval_key(updating.account, UPDATE_TOOL, evidence.hex())
    stale = running_lifetime(updating.pool.settings.timeout)
    ledger, begun = await anyio.to_thread.run_sync(
        begin_at, updating.store_url, key, updating.account, UPDATE_TOOL, stale
    )
    if begun.holder is None:
        assert begun.entry is not None
        return begun.entry
    return HeldReplacement(ledger, key, begun.holder)


async def _done(held: HeldReplacement, outcome: DraftUpdated) -> None:
    """Record in the ledger that the approved replacement ran (and its new id); a store that cannot is a problem of
    the result, never a failure of a draft saved."""
    recorded = {"id": outcome.id, "old_removed": outcome.old_removed}
    try:
        await anyio.to_thread.run_sync(held.ledger.advance, held.key, held.holder, "done", recorded)
    except StoreError as exc:
        outcome.problems.append(
            f"The draft was replaced, but the store could not record that it was ({exc}): the same approval "
            "repeated finds the old draft gone, or, where it stayed, may save the new content once more."
        )


def _held_back(old: OldDraft, entry: Entry, approved_by: Approver) -> CallToolResult:
    """Another attempt of this approval is replacing the draft, or did: this call changed nothing."""
    running = entry.state == "running"
    new_id, old_removed = entry.outcome.get("id"), entry.outcome.get("old_removed")
    outcome = DraftUpdated(
        status="in_progress" if running else "already_updated",
        mailbox=old.ref.mailbox,
        id=new_id if isinstance(new_id, str) else None,
        replaced_id=old.ref.id,
        old_removed=old_removed is True,
        approved_by=approved_by,
    )
    if running:
        text = "Nothing was changed by this call: another attempt of this approval is replacing the draft now."
    else:
        text = f"Nothing was changed by this call: this approval already replaced the draft (new id: {outcome.id})."
    return text_result(text, outcome)


async def _removed(updating: Updating, old: OldDraft, place: DraftPlace, problems: list[str]) -> bool:
    """Remove the old draft once the new one is saved; False (and why, in `problems`) when it stays."""
    try:
        removed = await updating.pool.run(lambda c: remove_draft(c, old.ref), retry=False)
    except MailboxError as exc:
        problems.append(
            f"The old draft {old.ref.id} could not be removed ({exc}); it may still be in Drafts, perhaps marked "
            "\\Deleted. Look there, and delete it with delete_messages if it is."
        )
        return False
    if not removed:
        problems.append(
            f"The old draft {old.ref.id} stays in Drafts: this server cannot expunge exactly one message (no "
            "UIDPLUS). Delete it with delete_messages (a person is asked) or in a mail client."
        )
        return False
    try:
        await anyio.to_thread.run_sync(forget_draft, updating.store_url, place)
    except StoreError as exc:  # a row of a draft gone names nothing: harmless
        get_logger().warning("update_draft: the replaced draft's row stays in the store (%s)", exc)
    return True


def _pending(old: OldDraft, token: str) -> DraftUpdated:
    return DraftUpdated(
        status="confirmation_required",
        mailbox=old.ref.mailbox,
        id=None,
        replaced_id=old.ref.id,
        old_removed=False,
        confirm_token=token,
    )


def _describe(outcome: DraftUpdated) -> str:
    new = outcome.id or "a new draft (the server did not report its UID: search Drafts for it)"
    text = f"Saved {new} in {outcome.mailbox!r} in place of {outcome.replaced_id}"
    text += "; the old draft is removed." if outcome.old_removed else "; the old draft is still there."
    return " ".join([text, *outcome.problems])
