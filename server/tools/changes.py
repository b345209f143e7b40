"""`delete_messages`, `move_messages` and `set_message_flags`: changing messages (`server/changes/`).

A person approves each delete, move and copy, bound to the exact target, and it runs once per
approval (`changes.once`); setting flags asks no one (nothing is lost) and reports what the server
kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import AfterValidator, BaseModel, Field

from imap_mcp.protocol import Guard
from imap_mcp.protocol.local_time import DialogClock

from ..changes.by_query import Pin, pin_key, resolve_query, resolve_query_counted
from ..changes.facts import SourceFacts, facts_lines, read_facts
from ..changes.flags import set_flags
from ..changes.messages import (
    ChangeReport,
    MessageOperation,
    PlannedMessageChange,
    left_out,
    plan_message_change,
    plan_present,
)
from ..changes.once import HeldBack, run_once
from ..changes.questions import message_change_request, shown_uids
from ..errors import ArgumentError
from ..guard import bound_to_the_store
from ..imap.lookup import MessageSelection
from ..imap.message_ids import MessageRef, encode_id
from ..imap.permanent_flags import KEYWORD, SETTABLE_SYSTEM_FLAGS
from ..imap.pool import Examined, ImapPool, InMailbox
from ..imap.session import Session
from .arguments import (
    ConfirmToken,
    DeprecatedMailbox,
    DeprecatedUids,
    MessageQuery,
    Query,
    chosen_by_query,
    one_mailbox_off_loop,
)
from .cancellation import noting_cancellation
from .change_answers import (
    MessageChange,
    done_answer,
    held_back_answer,
    nothing_matched,
    nothing_to_copy,
    pending_answer,
)
from .registry import offer
from .results import (
    LISTED_IDS_MAX,
    listed,
    log_change,
    log_stopped,
    progress_between_batches,
)

DELETE_TOOL = "delete_messages"
MOVE_TOOL = "move_messages"
Ids = Annotated[
    list[str],
    Field(min_length=1, max_length=50_000, description="Message ids (from search_messages), all of one mailbox."),
]
ToolAnswer = CallToolResult | InputRequiredResult
#: what both change tools' descriptions say of repeating a call, path by path
REPEATING = (
    " The dialog shows what the server knows of each message (arrival, size, read, flagged, attachments), never a "
    "subject or sender. Repeating a call: a client's retry carrying an answer already acted on, or the call "
    "repeated with the same confirm_token, changes nothing more; a new call asks again, about the messages still "
    "there (those moved or deleted are gone from the source; a copy skips messages whose Message-ID the "
    "destination already holds)."
)
Mode = Annotated[Literal["move", "copy"], Field(description="move: remove from the source; copy: keep them there.")]


SYSTEM_FLAGS = {flag.lower(): flag for flag in SETTABLE_SYSTEM_FLAGS}
#: the keywords imap-mcp sets for itself (`$ImapMcpListed`: list_new_messages' last look); no tool sets or clears one
OWN_KEYWORD_PREFIX = "$imapmcp"


def checked_flag(raw: str) -> str:
    """`\\Seen`, `\\Flagged`, `\\Answered` (any case) or a keyword; `\\Deleted` and the rest refused."""
    if raw.lower() == "\\deleted":
        raise ValueError("\\Deleted cannot be set or cleared here: to delete messages use delete_messages.")
    if raw.startswith("\\"):
        if raw.lower() not in SYSTEM_FLAGS:
            raise ValueError(f"{raw!r} is not allowed: use \\Seen, \\Flagged, \\Answered or a keyword.")
        return SYSTEM_FLAGS[raw.lower()]
    if not KEYWORD.fullmatch(raw):
        raise ValueError(f"{raw!r} is not a valid keyword: use letters, digits and $_.-+&' (at most 64).")
    if raw.lower().startswith(OWN_KEYWORD_PREFIX):
        raise ValueError(f"{raw!r} is one of imap-mcp's own keywords ($ImapMcp…), which no tool sets or clears.")
    return raw


Flags = Annotated[list[Annotated[str, AfterValidator(checked_flag)]], Field(max_length=20)]


class FlagsChanged(BaseModel):
    ids: list[str] = Field(description=f"The ids whose flags were changed (at most {LISTED_IDS_MAX}: see count).")
    missing_ids: list[str] = Field(
        description=f"Ids whose messages no longer exist; nothing happened to them (at most {LISTED_IDS_MAX}: see "
        "missing_count and rest)."
    )
    added: list[str] = Field(description="Flags asked to be added that every changed message now has (read back).")
    removed: list[str] = Field(description="Flags asked to be removed that no changed message has now (read back).")
    not_kept: list[str] = Field(
        default_factory=list,
        description="Flags the server did not keep as asked on at least one message: an added flag it dropped, or a "
        "removed one still there. Never reported as added or removed.",
    )
    count: int = Field(default=0, description="How many messages' flags were changed (exact).")
    missing_count: int = Field(default=0, description="How many messages no longer existed (exact).")
    rest: str | None = Field(
        default=None,
        description=f"Set when a list was cut at {LISTED_IDS_MAX} ids (the counts stay exact): the UIDs of the ids "
        "not listed, as ranges.",
    )


def _flags_rest(mailbox: str, done: tuple[int, ...], missing: tuple[int, ...]) -> str | None:
    """The UIDs of the ids a flag result does not list, as ranges; None when both lists are whole."""
    parts = [
        f"{what} UIDs in {mailbox!r}: {shown_uids(uids)}"
        for what, uids in (("changed", done), ("missing", missing))
        if len(uids) > LISTED_IDS_MAX
    ]
    return "; ".join(parts) + "." if parts else None


@dataclass(frozen=True)
class ByQuery:
    """A change chosen by a search: the criteria as given (for the question) and the key of its pin."""

    criteria: tuple[tuple[str, str], ...]
    key: str


@dataclass(frozen=True)
class ChangeCall:
    """One call of a change tool: the tool, what it does and where to, and the token it carries (if any)."""

    tool: str
    operation: MessageOperation
    destination: str | None
    confirm_token: str | None
    by_query: ByQuery | None = None


@dataclass(frozen=True)
class Changer:
    """What both change tools run with: the account's pool, the guard, and the store of the approval ledger."""

    pool: ImapPool
    guard: Guard
    store_url: str
    #: the zone the questions' times are written in
    clock: DialogClock = field(default_factory=DialogClock)

    @property
    def account(self) -> str:
        return self.pool.settings.account

    async def details(self, plan: PlannedMessageChange) -> tuple[str, ...]:
        """The question's lines on what the server knows of the messages: read when planned where a question was
        expected (`Guard.will_ask`), else now (one more EXAMINE and FETCH); none if the mailbox was renumbered."""
        facts = plan.facts
        if facts is None:

            def read(client: Session, examined: Examined) -> SourceFacts | None:
                if examined.uidvalidity != plan.source_uidvalidity:
                    return None
                return read_facts(client, plan.uids, examined.counts[1])

            facts = await self.pool.run(InMailbox(plan.source, read))
        if facts is None:
            return ()
        return facts_lines(facts, len(plan.uids), plan.source, self.clock)


async def change_by_query(changer: Changer, ctx: Context, call: ChangeCall, query: MessageQuery) -> ToolAnswer:
    """Resolve `query` to a UID set (or take the set the answered question was sealed with) and plan the change
    of it, in one pool operation; then ask and run like ids: a question about exactly that set, bound to it."""
    search = query.search()
    key = pin_key(call.tool, call.operation, call.destination, query.mailbox, search)
    pin = Pin.parse(changer.guard.pinned(ctx, call.confirm_token), key)
    call = replace(call, by_query=ByQuery(query.criteria(), key))
    with_facts = changer.guard.will_ask(ctx, call.confirm_token)

    def resolve_and_plan(client: Session) -> tuple[MessageSelection, PlannedMessageChange | None]:
        selection, exists = resolve_query_counted(client, query.mailbox, search, pin)
        if not selection.uids:
            return selection, None
        facts = read_facts(client, selection.uids, exists) if with_facts else None
        return selection, plan_present(
            client, changer.account, selection, call.operation, call.destination, facts=facts
        )

    selection, plan = await changer.pool.run(resolve_and_plan)
    if plan is None:  # a query that matched nothing (left): nothing to ask about
        return nothing_matched(selection, call.operation, call.destination, asked=pin is not None)
    return await _ask_and_run(changer, ctx, call, selection, plan)


async def change_messages(changer: Changer, ctx: Context, call: ChangeCall, selection: MessageSelection) -> ToolAnswer:
    """Plan, ask, and run one change of messages named by id."""
    with_facts = changer.guard.will_ask(ctx, call.confirm_token)
    plan = await changer.pool.run(
        lambda c: plan_message_change(c, changer.account, selection, call.operation, call.destination, with_facts)
    )
    return await _ask_and_run(changer, ctx, call, selection, plan)


async def _ask_and_run(
    changer: Changer, ctx: Context, call: ChangeCall, selection: MessageSelection, plan: PlannedMessageChange
) -> ToolAnswer:
    """The common path: the question about `plan`, and once approved the change, run once per approval."""
    details = partial(changer.details, plan)
    if call.by_query is None:
        request = message_change_request(call.tool, plan, details=details)
    else:
        pin = Pin(call.by_query.key, plan.source_uidvalidity, plan.uids)
        request = message_change_request(call.tool, plan, call.by_query.criteria, pin.text(), details)
    # requested UIDs that did not exist when planned: never part of the target, nor of the question
    absent = left_out(selection.uids, set(plan.uids))
    asked = changer.guard.opened(ctx, call.confirm_token) is not None
    # an answered move by COPY + UID EXPUNGE (a floor) may find its own copies, made by an attempt that died before
    # its expunge: the approval ledger decides, and the change finishes that attempt (`changes.once`)
    finishing = asked and plan.floor is not None
    if plan.already_present and len(plan.already_present) == len(plan.uids) and not finishing:
        return nothing_to_copy(request.summary, plan, absent, asked)
    request = await bound_to_the_store(request, changer.store_url)
    decision = await changer.guard.approve(ctx, request, call.confirm_token)
    channel = decision.channel
    if channel is None:
        return decision.reply(lambda token: pending_answer(plan, absent, token))

    def log(report: ChangeReport) -> None:
        """The change, logged before the call answers: a cancelled call's change is logged too (it gets no answer)."""
        if report.done:
            log_change(plan.operation, plan.source, report.done, channel.value, plan.destination)
        if report.not_run:
            log_stopped(plan.operation, plan.source, len(report.done), len(report.not_run))

    ran = await noting_cancellation(
        lambda: run_once(
            changer.pool,
            changer.store_url,
            plan,
            call.tool,
            decision.evidence(),
            progress_between_batches(ctx, request.summary),
            log,
        ),
        f"change: {plan.operation} mailbox={plan.source!r}",
        "stopping after the running batch",
    )
    if isinstance(ran, HeldBack):
        return held_back_answer(plan, ran, channel.value)
    return done_answer(request.summary, plan, absent, ran, channel.value)


def register(mcp: MCPServer, pool: ImapPool, guard: Guard, store_url: str, clock: DialogClock | None = None) -> None:
    changer = Changer(pool, guard, store_url, clock or DialogClock())

    @offer(
        mcp,
        DELETE_TOOL,
        guard=guard,
        description=(
            "Delete messages: by default move them to the Trash mailbox; with permanent: true expunge them for "
            "good (cannot be undone). Name them by ids, or by query (search_messages's filters): the person is "
            "asked about exactly the messages it matched then. A person is always asked to approve first, in a "
            "dialog where the client can show one; otherwise the first call returns a confirm_token and changes "
            "nothing." + REPEATING
        ),
    )
    async def delete_messages(
        ctx: Context,
        ids: Ids | None = None,
        query: Query = None,
        permanent: Annotated[bool, Field(description="true: expunge for good; false: move to Trash.")] = False,
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uids: DeprecatedUids = None,
    ) -> Annotated[CallToolResult, MessageChange] | InputRequiredResult:
        operation: MessageOperation = "delete_permanently" if permanent else "trash"
        call = ChangeCall(DELETE_TOOL, operation, None, confirm_token)
        if (chosen := chosen_by_query(query, ids, mailbox, uids)) is not None:
            return await change_by_query(changer, ctx, call, chosen)
        return await change_messages(changer, ctx, call, await one_mailbox_off_loop(ids, mailbox, uids))

    @offer(
        mcp,
        MOVE_TOOL,
        guard=guard,
        description=(
            "Move (mode 'move') or copy (mode 'copy') messages to another mailbox, named by ids or by query "
            "(search_messages's filters); returns their new ids (a large change: counts and ranges). A person "
            "is always asked to approve first, for both modes, in a dialog where the client can show one; otherwise "
            "the first call returns a confirm_token and changes nothing. A copy or a move skips messages whose "
            "Message-ID the destination already holds (a move leaves them in the source: nothing is duplicated, "
            "nothing lost)." + REPEATING
        ),
    )
    async def move_messages(
        destination: Annotated[str, Field(min_length=1, description="The mailbox to move or copy to.")],
        ctx: Context,
        ids: Ids | None = None,
        query: Query = None,
        mode: Annotated[
            Literal["move", "copy"], Field(description="move: remove from the source; copy: keep.")
        ] = "move",
        confirm_token: ConfirmToken = None,
        mailbox: DeprecatedMailbox = None,
        uids: DeprecatedUids = None,
    ) -> Annotated[CallToolResult, MessageChange] | InputRequiredResult:
        call = ChangeCall(MOVE_TOOL, mode, destination, confirm_token)
        if (chosen := chosen_by_query(query, ids, mailbox, uids)) is not None:
            return await change_by_query(changer, ctx, call, chosen)
        return await change_messages(changer, ctx, call, await one_mailbox_off_loop(ids, mailbox, uids))

    @offer(
        mcp,
        "set_message_flags",
        description=(
            "Add or remove flags on messages (by ids, or by query: search_messages's filters): \\Seen (read), "
            "\\Flagged, \\Answered, or keywords. \\Deleted is refused: use delete_messages. Reports the flags the "
            "server kept, read back."
        ),
    )
    async def set_message_flags(
        ids: Annotated[
            list[str] | None, Field(min_length=1, max_length=50_000, description="Message ids, of one mailbox.")
        ] = None,
        query: Query = None,
        add: Annotated[Flags, Field(description="Flags to add.")] = [],  # noqa: B006 (pydantic copies defaults)
        remove: Annotated[Flags, Field(description="Flags to remove.")] = [],  # noqa: B006
        mailbox: DeprecatedMailbox = None,
        uids: DeprecatedUids = None,
    ) -> FlagsChanged:
        if not add and not remove:
            raise ArgumentError("Give at least one flag in add or remove.")
        if (chosen := chosen_by_query(query, ids, mailbox, uids)) is not None:
            search = chosen.search()
            messages = await pool.run(lambda c: resolve_query(c, chosen.mailbox, search))
        else:
            messages = await one_mailbox_off_loop(ids, mailbox, uids)
        report = await pool.run(lambda c: set_flags(c, messages, add, remove))
        if report.done:
            log_change(f"set_flags +{add} -{remove}", messages.mailbox, report.done)

        def as_ids(uids: Sequence[int]) -> list[str]:
            return [encode_id(MessageRef(messages.mailbox, report.uidvalidity, uid)) for uid in uids]

        return FlagsChanged(
            ids=as_ids(listed(report.done)),
            missing_ids=as_ids(listed(report.missing)),
            added=list(report.added),
            removed=list(report.removed),
            not_kept=list(report.not_kept),
            count=len(report.done),
            missing_count=len(report.missing),
            rest=_flags_rest(messages.mailbox, report.done, report.missing),
        )
