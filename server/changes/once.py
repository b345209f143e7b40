"""Running an approved move, copy or delete once, however many attempts answer the same approval at once.

Concurrent answers to one approval (a client retrying, a gateway sending twice, replicas that share
only the store) would each find the messages still to change. The approval ledger (`store.ledger`)
lets one attempt hold the approval; every other answers `in_progress` while it runs. A replay
after it ran finds its messages gone (a move, a delete) or in the destination (a copy skips those).

An attempt that fails without changing anything releases the approval, so a replay runs at once.
One that dies may have changed part: its row stays `running` until it is older than twice
IMAP_TIMEOUT, then the next replay takes it over. For a move by COPY then EXPUNGE (no MOVE) the row
keeps the destination's UIDNEXT from before the first COPY (`PlannedMessageChange.floor`), so what
the dead attempt copied is found above it by Message-ID and finished, never copied again.
Nothing of this is kept in a mailbox, where a stranger's mail or any mail client could forge it.

Once the change ran, a store that cannot record it (locked, read-only, full, gone) does not turn the report
into a failure: the report says what ran, and its `problems` what a replay of the approval then does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import anyio.to_thread

from ..imap.pool import ImapPool
from ..imap.session import Session
from ..store.database import StoreError
from ..store.ledger import Ledger, approval_key, begin_at, running_lifetime
from .messages import (
    AfterBatch,
    ChangeRefused,
    ChangeReport,
    Execution,
    PlannedMessageChange,
    execute_message_change,
)


@dataclass(frozen=True)
class HeldBack:
    """This attempt changed nothing: another attempt of the approval is running it (`running`), or it ran."""

    running: bool


async def run_once(
    pool: ImapPool,
    store_url: str,
    plan: PlannedMessageChange,
    tool: str,
    evidence: bytes,
    after_batch: AfterBatch | None = None,
    logged: Callable[[ChangeReport], None] = lambda report: None,
) -> ChangeReport | HeldBack:
    """Run `plan` once for the approval `evidence` names (the same bytes on every replay of one approval).

    `logged` is told the report inside the pool operation, before the call answers: a cancelled call gets no
    answer, so its change is logged there.
    """
    key = approval_key(plan.account, tool, evidence.hex())
    recorded = {"floor": plan.floor} if plan.floor is not None else None
    ledger, begun = await anyio.to_thread.run_sync(
        begin_at, store_url, key, plan.account, tool, running_lifetime(pool.settings.timeout), recorded
    )
    if begun.holder is None:
        assert begun.entry is not None
        return HeldBack(running=begun.entry.state == "running")
    holder = begun.holder
    dead = begun.taken_over.outcome.get("floor") if begun.taken_over is not None else None
    execution = Execution(floor=dead if isinstance(dead, int) else None, after_batch=after_batch)

    def execute(client: Session) -> ChangeReport:
        report = execute_message_change(client, plan, execution)
        logged(report)
        return report

    try:
        report = await pool.run(execute, retry=False)
    except Exception as exc:
        # a refusal changed nothing; without a floor a replay repeats nothing wrongly (a move by MOVE, a copy
        # skipping what is there, a delete): either may run at once. A move by COPY keeps its row for the taker.
        if isinstance(exc, ChangeRefused) or recorded is None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(ledger.release_if_possible, key, holder)
        raise
    return await _recorded(ledger, key, holder, plan, report)


async def _recorded(
    ledger: Ledger, key: str, holder: str, plan: PlannedMessageChange, report: ChangeReport
) -> ChangeReport:
    """The report, once the ledger knows the change ran (or, stopped by cancellation, that the approval still
    covers the rest); a store that cannot record it is a problem of the report, never a failure of a change made."""
    try:
        if report.not_run:
            await anyio.to_thread.run_sync(ledger.release, key, holder)
        else:
            await anyio.to_thread.run_sync(ledger.advance, key, holder, "done", {"count": len(report.done)})
    except StoreError as exc:
        return replace(report, problems=(*report.problems, _unrecorded(plan, exc)))
    return report


def _unrecorded(plan: PlannedMessageChange, exc: StoreError) -> str:
    """What a replay of the approval does when the store could not record that the change ran: its row stays
    `running`, so a replay answers in_progress until twice IMAP_TIMEOUT, then runs the change again on what is left."""
    if plan.operation == "copy":
        again = (
            f"finds the copies in {plan.destination!r} by Message-ID and copies nothing more (a message without a "
            "Message-ID would be copied again)"
        )
    else:
        again = f"finds the messages gone from {plan.source!r} and changes nothing more"
    return (
        f"The change ran, but the store could not record that it did ({exc}) Repeating the call with the same "
        f"approval {again}; do not ask for a new approval to do it again."
    )
