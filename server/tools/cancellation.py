"""Long work in a worker thread, cancelled by its call: the thread stops at its next step (between
batches of a change, between chunks of a download), and the log says at once that it was cancelled.

A cancelled call gets no answer (the spec forbids one: on stdio the client sent
`notifications/cancelled`, on Streamable HTTP 2026-07-28 it closed the response stream), so the log
is where what happened is told.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from anyio import from_thread
from mcp.server.mcpserver import Context

from ..logs import get_logger

T = TypeVar("T")


class CallCancelled(Exception):
    """Raised in a worker thread at its next step once its call is cancelled: the work stops there.

    A control-flow signal, outside the error tree: the cancelled call gets no answer, so no caller reads it."""


def progress_from_thread(ctx: Context, describe: Callable[[int, int], str]) -> Callable[[int, int], None]:
    """For work in a worker thread, told (done, total) after each step: a progress notification (sent only
    when the client passed a progress token, and only when `done` rose: work run again after a dropped
    connection starts over); `CallCancelled` once the call is cancelled."""
    cancelled = anyio.get_cancelled_exc_class()
    told = 0

    def report(done: int, total: int) -> None:
        nonlocal told
        try:
            from_thread.check_cancelled()
            if done > told:
                told = done
                from_thread.run(ctx.report_progress, done, total, describe(done, total))
        except cancelled:
            raise CallCancelled from None

    return report


async def noting_cancellation(work: Callable[[], Awaitable[T]], what: str, stopping: str) -> T:
    """`await work()` (work in a worker thread, which a cancelled call still waits for), logging
    "`what` cancelled by the client; `stopping`" the moment the call is cancelled.

    Exceptions of `work` come out as they are (not in an exception group); a cancellation comes out
    once the thread is done."""
    outcome: list[T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as watching:
        watching.start_soon(_log_when_cancelled, watching.cancel_scope, f"{what} cancelled by the client; {stopping}")
        try:
            outcome.append(await work())
        except Exception as exc:  # raised below, outside the task group
            failure.append(exc)
        watching.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return outcome[0]


async def _log_when_cancelled(own: anyio.CancelScope, line: str) -> None:
    """Wait; when cancelled by the call's cancellation (not by `own`, once the work is done), log `line`."""
    try:
        await anyio.sleep_forever()
    finally:
        if not own.cancel_called:
            get_logger().info("%s", line)
