"""What the tools that change a mailbox share: annotations, one mailbox per call, results, the change log."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from anyio import to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from imap_mcp.server.imap.lookup import MessageSelection, resolve_selections
from imap_mcp.server.imap.uid_sets import compress
from imap_mcp.server.logs import get_logger
from imap_mcp.server.tools.cancellation import CallCancelled, progress_from_thread
from imap_mcp.server.tools.errors import refusals
from imap_mcp.server.tools.queries import MessageQuery

#: the most ids a change result lists per list (counts stay exact); a large change is told in counts and ranges
LISTED_IDS_MAX = 100


def changing(title: str, *, destructive: bool, idempotent: bool) -> ToolAnnotations:
    """A tool that changes the mailbox; all four hints stated."""
    return ToolAnnotations(
        title=title,
        read_only_hint=False,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=True,
    )


#: ids decoded on the event loop itself; more go to a worker thread (50,000 take long enough to stall other calls)
IDS_ON_LOOP = 100


async def one_mailbox_off_loop(
    ids: Sequence[str] | None, mailbox: str | None = None, uids: Sequence[int] | None = None
) -> MessageSelection:
    """`one_mailbox`, in a worker thread when there are many ids (a thread hop costs more than a few ids)."""
    if len(ids or ()) + len(uids or ()) <= IDS_ON_LOOP:
        return one_mailbox(ids, mailbox, uids)
    return await to_thread.run_sync(one_mailbox, ids, mailbox, uids)


def one_mailbox(
    ids: Sequence[str] | None, mailbox: str | None = None, uids: Sequence[int] | None = None
) -> MessageSelection:
    """The ids (or deprecated mailbox + uids) as one mailbox's UIDs; a change acts on one mailbox per call."""
    with refusals():
        groups = resolve_selections(ids, mailbox, uids)
    if len(groups) != 1:
        names = ", ".join(sorted({g.mailbox for g in groups}))
        raise ToolError(
            f"The ids name messages in more than one mailbox (or mailbox generation): {names}. "
            "Change one mailbox's messages per call."
        )
    return groups[0]


def chosen_by_query(
    query: MessageQuery | None, ids: Sequence[str] | None, mailbox: str | None, uids: Sequence[int] | None
) -> MessageQuery | None:
    """`query` when the call names its messages by search; None when by ids; a `ToolError` for both."""
    if query is None:
        return None
    if ids or mailbox is not None or uids:
        raise ToolError(
            "Give either ids (or the deprecated mailbox + uids) or query, not both: query chooses the messages "
            "itself, in query.mailbox."
        )
    return query


def listed(uids: Sequence[int]) -> Sequence[int]:
    """The first `LISTED_IDS_MAX` of `uids`: what a result lists of a large change."""
    return uids[:LISTED_IDS_MAX]


def progress_between_batches(ctx: Context, doing: str) -> Callable[[int, int], bool]:
    """For a change running in a worker thread, told after each batch: a progress notification (sent only
    when the client passed a progress token), and whether to go on: False once the call is cancelled
    (`tools.cancellation`: the call gets no answer, the log says what was done)."""
    report = progress_from_thread(ctx, lambda done, total: f"{doing}: {done} of {total} messages")

    def after_batch(done: int, total: int) -> bool:
        try:
            report(done, total)
        except CallCancelled:
            return False
        return True

    return after_batch


def text_result(text: str, model: BaseModel, is_error: bool = False) -> CallToolResult:
    """A result whose text is written for the model and whose structured content is `model`."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json", by_alias=True),
        is_error=is_error,
    )


def log_change(
    operation: str,
    mailbox: str,
    uids: Sequence[int] = (),
    approved_by: str = "not needed",
    destination: str | None = None,
) -> None:
    """One stderr line per change that ran: never a subject, body or secret."""
    where = f"mailbox={mailbox!r}" + (f" destination={destination!r}" if destination else "")
    uid_part = f" uids={compress(uids)} count={len(uids)}" if uids else ""
    get_logger().info("change: %s %s%s approved_by=%s", operation, where, uid_part, approved_by)


def log_stopped(operation: str, mailbox: str, done: int, not_run: int) -> None:
    """The stderr line of a change stopped between batches because its call was cancelled."""
    get_logger().info(
        "change: %s mailbox=%r stopped by cancellation after %d message(s); %d not changed",
        operation,
        mailbox,
        done,
        not_run,
    )
