"""What tool results share: a text for the model beside the structured result, id lists cut to a bound, the
change log (one stderr line per change that ran), and progress between the batches of a long change."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from ..imap.uid_sets import compress
from ..logs import get_logger
from ..reading.fence import Fenced, fenced_text
from .cancellation import CallCancelled, progress_from_thread

#: the most ids a change result lists per list (counts stay exact); a large change is told in counts and ranges
LISTED_IDS_MAX = 100


def listed(uids: Sequence[int]) -> Sequence[int]:
    """The first `LISTED_IDS_MAX` of `uids`: what a result lists of a large change."""
    return uids[:LISTED_IDS_MAX]


def text_result(text: str, model: BaseModel, is_error: bool = False) -> CallToolResult:
    """A result whose text is written for the model and whose structured content is `model`."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json", by_alias=True),
        is_error=is_error,
    )


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


def fenced_result(result: Fenced) -> CallToolResult:
    """The tool answer for `result`: the fenced text, and `result` as structured content."""
    dumped = result.model_dump(mode="json", by_alias=True)
    return CallToolResult(
        content=[TextContent(type="text", text=fenced_text(result, dumped))], structured_content=dumped
    )
