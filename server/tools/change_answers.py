"""What a change of messages answers: its result model (`MessageChange`), the new ids and what is left, and the text
for each outcome (done, held back, pending a confirm token, nothing matched, nothing to copy)."""

from __future__ import annotations

from typing import Literal

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from imap_mcp.protocol.eras import Approver

from ..changes.messages import (
    ChangeReport,
    MessageOperation,
    PlannedMessageChange,
)
from ..changes.once import HeldBack
from ..changes.questions import shown_uids
from ..imap.lookup import MessageSelection
from ..imap.message_ids import MessageRef, encode_id
from .results import (
    LISTED_IDS_MAX,
    listed,
    text_result,
)


class MessageChange(BaseModel):
    status: Literal["done", "nothing_to_do", "in_progress", "confirmation_required"] = Field(
        description="done: the change ran; nothing_to_do: nothing was left to change (the messages were gone "
        "by the time it ran, a copy or move found them all in the destination already, or a query matched nothing); "
        "in_progress: another attempt "
        "of this same approved change is running it right now, this call changed nothing (repeat it later to "
        "learn the outcome); confirmation_required: nothing ran yet, repeat the call with confirm_token."
    )
    operation: MessageOperation
    mailbox: str = Field(description="The source mailbox.")
    destination: str | None = Field(description="Where the messages went (Trash for a trash-delete).")
    count: int = Field(
        description="How many messages were changed; with confirmation_required, how many the change will change "
        "once confirmed (nothing has changed yet)."
    )
    ids: list[str] = Field(
        description=f"The ids that were changed (with confirmation_required: that the change will change); at most "
        f"{LISTED_IDS_MAX}: see rest."
    )
    missing_ids: list[str] = Field(
        description=f"Ids whose messages did not exist, so nothing happened to them (at most {LISTED_IDS_MAX}: "
        "see missing_count and rest)."
    )
    already_present_ids: list[str] = Field(
        default_factory=list,
        description="Copy and move: ids not copied or moved because the destination already holds a message with "
        "the same Message-ID (a repeated copy or move); a move leaves them in the source mailbox (delete them there "
        "if they are no longer wanted). Messages without a Message-ID are always copied or moved.",
    )
    new_ids: list[str] = Field(description="Ids in the destination, in the order of ids (empty if not reported).")
    missing_count: int = Field(default=0, description="How many messages did not exist (exact).")
    already_present_count: int = Field(default=0, description="How many were not copied or moved (exact).")
    new_count: int = Field(default=0, description="How many new ids the destination reported (exact).")
    rest: str | None = Field(
        default=None,
        description=f"Set when an id list was cut at {LISTED_IDS_MAX} ids (the counts stay exact): how to get "
        "the ids not listed.",
    )
    approved_by: Approver | None = Field(
        description="How the change was approved: a dialog (2026-07-28), a pushed dialog (2025-11-25), "
        "or the two-call token."
    )
    confirm_token: str | None = Field(default=None, description="Pass this back to run the change (token path).")
    problems: list[str] = Field(
        default_factory=list,
        description="What could not be recorded after the change ran (it still ran), and what a replay then does.",
    )


def new_ids(mailbox: str, uidvalidity: int | None, uids: tuple[int, ...]) -> list[str]:
    """The ids of the first `LISTED_IDS_MAX` of `uids`."""
    return [encode_id(MessageRef(mailbox, uidvalidity or 0, uid)) for uid in listed(uids)]


def what_is_left(outcome: MessageChange, changed: tuple[int, ...], missing: tuple[int, ...]) -> str | None:
    """How to get the ids a large result does not list; None when every list is whole."""
    lists = (
        ("ids", outcome.ids, len(changed)),
        ("missing_ids", outcome.missing_ids, outcome.missing_count),
        ("already_present_ids", outcome.already_present_ids, outcome.already_present_count),
        ("new_ids", outcome.new_ids, outcome.new_count),
    )
    cut = [name for name, ids, count in lists if len(ids) < count]
    if not cut:
        return None
    text = f"{', '.join(cut)} list only the first {LISTED_IDS_MAX}; the counts are exact."
    if changed:
        text += f" UIDs in {outcome.mailbox!r}: {shown_uids(changed)}."
    if len(outcome.missing_ids) < outcome.missing_count:
        text += (
            f" The missing ids are those of {outcome.mailbox!r} at the UIDs {shown_uids(missing)}: they name no "
            "message now, so there is nothing to retry."
        )
    if outcome.destination and outcome.new_count > len(outcome.new_ids):
        text += f" search_messages in {outcome.destination!r} lists the new ids (newest first)."
    return text


def held_back_answer(plan: PlannedMessageChange, held: HeldBack, approved_by: Approver) -> CallToolResult:
    """Another attempt of this approval is running the change, or ran it: this call changed nothing."""
    outcome = MessageChange(
        status="in_progress" if held.running else "nothing_to_do",
        operation=plan.operation,
        mailbox=plan.source,
        destination=plan.destination,
        count=0,
        ids=[],
        missing_ids=[],
        new_ids=[],
        approved_by=approved_by,
    )
    if held.running:
        text = (
            "Nothing was changed by this call: another attempt of this approved change is running it now. Repeat "
            "the call to learn the outcome."
        )
    else:
        text = "Nothing was changed by this call: this approved change already ran."
    return text_result(text, outcome)


def done_answer(
    summary: str, plan: PlannedMessageChange, absent: tuple[int, ...], report: ChangeReport, approved_by: Approver
) -> CallToolResult:
    missing = absent + report.missing
    new_uids = tuple(report.new_uids.values())
    outcome = MessageChange(
        status="done" if report.done else "nothing_to_do",
        operation=plan.operation,
        mailbox=plan.source,
        destination=plan.destination,
        count=len(report.done),
        ids=new_ids(plan.source, plan.source_uidvalidity, report.done),
        missing_ids=new_ids(plan.source, plan.source_uidvalidity, missing),
        already_present_ids=new_ids(plan.source, plan.source_uidvalidity, report.already_present),
        new_ids=new_ids(plan.destination or "", report.destination_uidvalidity, new_uids),
        missing_count=len(missing),
        already_present_count=len(report.already_present),
        new_count=len(new_uids),
        approved_by=approved_by,
        problems=list(report.problems),
    )
    outcome.rest = what_is_left(outcome, report.done, missing)
    return text_result(describe_change(summary, outcome, new_uids), outcome)


def pending_answer(target: PlannedMessageChange, absent: tuple[int, ...], token: str) -> MessageChange:
    """The token path's first answer: nothing ran; repeat with `token`."""
    pending = MessageChange(
        status="confirmation_required",
        operation=target.operation,
        mailbox=target.source,
        destination=target.destination,
        count=len(target.uids),
        ids=new_ids(target.source, target.source_uidvalidity, target.uids),
        missing_ids=new_ids(target.source, target.source_uidvalidity, absent),
        new_ids=[],
        missing_count=len(absent),
        approved_by=None,
        confirm_token=token,
    )
    pending.rest = what_is_left(pending, target.uids, absent)
    return pending


def after_asking(asked: bool) -> str:
    """What became of the question, for an answer that changed nothing: no one was asked, or a person's answer
    (this call carries one) found nothing left to act on."""
    if asked:
        return " The person's answer was not used: nothing it covered was left to change."
    return " Nobody was asked."


def nothing_matched(
    selection: MessageSelection, operation: MessageOperation, destination: str | None, asked: bool
) -> CallToolResult:
    """The answer to a query that matched nothing: when asked, nothing of the set the person was asked about is
    left (gone, or the mailbox was re-created since)."""
    outcome = MessageChange(
        status="nothing_to_do",
        operation=operation,
        mailbox=selection.mailbox,
        destination=destination,
        count=0,
        ids=[],
        missing_ids=[],
        new_ids=[],
        approved_by=None,
    )
    if asked:
        text = (
            f"Nothing was changed: none of the messages the person was asked about is in {selection.mailbox!r} any "
            "more (they were deleted or moved, or the mailbox was re-created since)."
        )
    else:
        text = f"Nothing was changed: no message in {selection.mailbox!r} matches the query."
    text += after_asking(asked)
    return text_result(text, outcome)


def nothing_to_copy(summary: str, target: PlannedMessageChange, absent: tuple[int, ...], asked: bool) -> CallToolResult:
    """The answer, without a question, to a copy or move whose every message the destination already holds."""
    outcome = MessageChange(
        status="nothing_to_do",
        operation=target.operation,
        mailbox=target.source,
        destination=target.destination,
        count=0,
        ids=[],
        missing_ids=new_ids(target.source, target.source_uidvalidity, absent),
        already_present_ids=new_ids(target.source, target.source_uidvalidity, target.uids),
        new_ids=[],
        missing_count=len(absent),
        already_present_count=len(target.uids),
        approved_by=None,
    )
    outcome.rest = what_is_left(outcome, (), absent)
    return text_result(describe_change(summary, outcome, ()) + after_asking(asked), outcome)


def describe_change(summary: str, outcome: MessageChange, new_uids: tuple[int, ...]) -> str:
    if outcome.status == "nothing_to_do":
        text = f"Nothing was changed ({summary})."
    else:
        text = f"Done ({outcome.approved_by}): {summary}. Changed {outcome.count} message(s)."
    if outcome.already_present_count:
        text += f" {outcome.already_present_count} already had a copy in {outcome.destination!r} (same Message-ID) " + (
            "and were not copied again."
            if outcome.operation == "copy"
            else f"and were not moved: they are still in {outcome.mailbox!r} (already_present_ids); delete them "
            "there if they are no longer wanted."
        )
    if outcome.missing_count:
        text += f" {outcome.missing_count} did not exist (any more) and were left alone."
    if outcome.new_count > LISTED_IDS_MAX:
        text += f" New UIDs in {outcome.destination!r}: {shown_uids(new_uids)} (search_messages there lists their ids)."
    elif outcome.new_ids:
        text += " New ids: " + ", ".join(outcome.new_ids)
    return " ".join([text, *outcome.problems])
