"""`delete_messages` and `move_messages`: a person approves each, bound to the exact target."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import BaseModel, Field

from imap_mcp.protocol import Guard
from imap_mcp.server.changes.claims import ChangeInProgress, lifetime
from imap_mcp.server.changes.messages import (
    MessageOperation,
    PlannedMessageChange,
    all_copied_already,
    execute_message_change,
    left_out,
    plan_message_change,
)
from imap_mcp.server.changes.questions import message_change_request
from imap_mcp.server.imap.lookup import MessageSelection
from imap_mcp.server.imap.message_ids import MessageRef, encode_id
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.tools.changes_common import changing, log_change, one_mailbox_off_loop, text_result
from imap_mcp.server.tools.deprecated import DeprecatedMailbox, DeprecatedUids
from imap_mcp.server.tools.errors import on_mailbox, refusals

DELETE_TOOL = "delete_messages"
MOVE_TOOL = "move_messages"
Ids = Annotated[
    list[str],
    Field(min_length=1, max_length=50_000, description="Message ids (from search_messages), all of one mailbox."),
]
Mode = Annotated[Literal["move", "copy"], Field(description="move: remove from the source; copy: keep them there.")]
ConfirmToken = Annotated[
    str | None,
    Field(
        description="Only when a previous identical call returned a confirm_token because no dialog could be "
        "shown: pass that token to run the change."
    ),
]


class MessageChange(BaseModel):
    status: Literal["done", "nothing_to_do", "in_progress", "confirmation_required"] = Field(
        description="done: the change ran; nothing_to_do: nothing was left to change (the messages were gone "
        "by the time it ran, or a copy found them all in the destination already); in_progress: another attempt "
        "of this same approved change is running it right now, this call changed nothing (repeat it later to "
        "learn the outcome); confirmation_required: nothing ran yet, repeat the call with confirm_token."
    )
    operation: MessageOperation
    mailbox: str = Field(description="The source mailbox.")
    destination: str | None = Field(description="Where the messages went (Trash for a trash-delete).")
    count: int = Field(description="How many messages were changed.")
    ids: list[str] = Field(description="The ids that were changed.")
    missing_ids: list[str] = Field(description="Ids whose messages did not exist, so nothing happened to them.")
    already_present_ids: list[str] = Field(
        default_factory=list,
        description="Copy only: ids not copied again because the destination already holds a message with the "
        "same Message-ID (a repeated copy). Messages without a Message-ID are always copied.",
    )
    new_ids: list[str] = Field(description="Ids in the destination, in the order of ids (empty if not reported).")
    approved_by: Literal["dialog", "push", "token"] | None = Field(
        description="How the change was approved: a dialog (2026-07-28), a pushed dialog (2025-11-25), "
        "or the two-call token."
    )
    confirm_token: str | None = Field(default=None, description="Pass this back to run the change (token path).")


def _ids(mailbox: str, uidvalidity: int | None, uids: tuple[int, ...]) -> list[str]:
    return [encode_id(MessageRef(mailbox, uidvalidity or 0, uid)) for uid in uids]


async def change_messages(
    pool: ImapPool,
    guard: Guard,
    ctx: Context,
    tool: str,
    selection: MessageSelection,
    operation: MessageOperation,
    destination: str | None,
    confirm_token: str | None,
) -> CallToolResult | InputRequiredResult:
    """Plan, ask, and run one message change; the common path of both tools."""
    account = pool.settings.account
    target = await on_mailbox(pool, lambda c: plan_message_change(c, account, selection, operation, destination))
    request = message_change_request(tool, target)
    # requested UIDs that did not exist when planned: never part of the target, nor of the question
    absent = left_out(selection.uids, set(target.uids))
    if await on_mailbox(pool, lambda c: all_copied_already(c, target)):
        return _nothing_to_copy(request.summary, target, absent)
    decision = await guard.approve(ctx, request, confirm_token)
    channel = decision.channel
    if channel is None:
        return decision.reply(
            lambda token: MessageChange(
                status="confirmation_required",
                operation=operation,
                mailbox=target.source,
                destination=target.destination,
                count=0,
                ids=_ids(target.source, target.source_uidvalidity, target.uids),
                missing_ids=_ids(target.source, target.source_uidvalidity, absent),
                new_ids=[],
                approved_by=None,
                confirm_token=token,
            )
        )
    claim_lifetime = lifetime(pool.settings.timeout)
    with refusals():
        try:
            report = await pool.run(lambda c: execute_message_change(c, target, claim_lifetime), retry=False)
        except ChangeInProgress as exc:  # not a failure: another attempt is doing it
            return text_result(
                f"Nothing was changed by this call: {exc}. Repeat the call to learn the outcome.",
                MessageChange(
                    status="in_progress",
                    operation=operation,
                    mailbox=target.source,
                    destination=target.destination,
                    count=0,
                    ids=[],
                    missing_ids=[],
                    new_ids=[],
                    approved_by=channel.value,
                ),
            )
    if report.done:
        log_change(operation, target.source, report.done, channel.value, target.destination)
    outcome = MessageChange(
        status="done" if report.done else "nothing_to_do",
        operation=operation,
        mailbox=target.source,
        destination=target.destination,
        count=len(report.done),
        ids=_ids(target.source, target.source_uidvalidity, report.done),
        missing_ids=_ids(target.source, target.source_uidvalidity, absent + report.missing),
        already_present_ids=_ids(target.source, target.source_uidvalidity, report.already_present),
        new_ids=_ids(target.destination or "", report.destination_uidvalidity, tuple(report.new_uids.values())),
        approved_by=channel.value,
    )
    return text_result(_describe(request.summary, outcome), outcome)


def _nothing_to_copy(summary: str, target: PlannedMessageChange, absent: tuple[int, ...]) -> CallToolResult:
    """The answer, without a question, to a copy whose every message the destination already holds."""
    outcome = MessageChange(
        status="nothing_to_do",
        operation=target.operation,
        mailbox=target.source,
        destination=target.destination,
        count=0,
        ids=[],
        missing_ids=_ids(target.source, target.source_uidvalidity, absent),
        already_present_ids=_ids(target.source, target.source_uidvalidity, target.uids),
        new_ids=[],
        approved_by=None,
    )
    return text_result(_describe(summary, outcome) + " Nobody was asked.", outcome)


def _describe(summary: str, outcome: MessageChange) -> str:
    if outcome.status == "nothing_to_do":
        text = f"Nothing was changed ({summary})."
    else:
        text = f"Done ({outcome.approved_by}): {summary}. Changed {outcome.count} message(s)."
    if outcome.already_present_ids:
        text += (
            f" {len(outcome.already_present_ids)} already had a copy in {outcome.destination!r} (same Message-ID) "
            "and were not copied again."
        )
    if outcome.missing_ids:
        text += f" {len(outcome.missing_ids)} did not exist (any more) and were left alone."
    if outcome.new_ids:
        text += " New ids: " + ", ".join(outcome.new_ids)
    return text


def register(mcp: MCPServer, pool: ImapPool, guard: Guard) -> None:
    @guard.tool(
        mcp,
        DELETE_TOOL,
        title="Delete messages",
        description=(
            "Delete messages: by default move them to the Trash mailbox; with permanent: true expunge them for "
            "good (cannot be undone). A person is always asked to approve first, in a dialog where the client can "
            "show one; otherwise the first call returns a confirm_token and changes nothing."
        ),
        annotations=changing("Delete messages", destructive=True, idempotent=True),
    )
    async def delete_messages(
        ctx: Context,
        ids: Ids | None = None,
        permanent: Annotated[bool, Field(description="true: expunge for good; false: move to Trash.")] = False,
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uids: DeprecatedUids = None,
    ) -> Annotated[CallToolResult, MessageChange] | InputRequiredResult:
        operation: MessageOperation = "delete_permanently" if permanent else "trash"
        selection = await one_mailbox_off_loop(ids, mailbox, uids)
        return await change_messages(pool, guard, ctx, DELETE_TOOL, selection, operation, None, confirm_token)

    @guard.tool(
        mcp,
        MOVE_TOOL,
        title="Move or copy messages",
        description=(
            "Move (mode 'move') or copy (mode 'copy') messages to another mailbox; returns their new ids. A person "
            "is always asked to approve first, for both modes, in a dialog where the client can show one; otherwise "
            "the first call returns a confirm_token and changes nothing. A copy skips messages whose Message-ID the "
            "destination already holds, so repeating it copies nothing twice; a message without a Message-ID is "
            "copied every time."
        ),
        annotations=changing("Move or copy messages", destructive=True, idempotent=False),
    )
    async def move_messages(
        destination: Annotated[str, Field(min_length=1, description="The mailbox to move or copy to.")],
        ctx: Context,
        ids: Ids | None = None,
        mode: Annotated[
            Literal["move", "copy"], Field(description="move: remove from the source; copy: keep.")
        ] = "move",
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uids: DeprecatedUids = None,
    ) -> Annotated[CallToolResult, MessageChange] | InputRequiredResult:
        selection = await one_mailbox_off_loop(ids, mailbox, uids)
        return await change_messages(pool, guard, ctx, MOVE_TOOL, selection, mode, destination, confirm_token)
