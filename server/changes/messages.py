"""Moving, copying and deleting messages, exactly as approved.

Planning (`plan_message_change`) observes the mailbox's current state and returns the exact
`PlannedMessageChange` a person is asked about (its `target` is what the approval is sealed
to). The answer's call plans again, and its approval opens only for the plan it finds: so an
approved change runs (`execute_message_change`) on a plan observed a moment earlier in the same
call, without observing it once more; a source re-created in between is refused. A guarded
change's answer costs few round trips: EXAMINE, one FETCH, the destination's STATUS, then
SELECT and the change itself (`bench/guarded.py` counts them).

Mailbox-side rules:
- Move uses MOVE where offered; otherwise COPY, then `\\Deleted` + `UID EXPUNGE` of exactly the
  moved UIDs, which needs UIDPLUS. With neither, a move (and a trash-delete, which is a move to
  Trash) is refused; a copy still works.
- A permanent delete marks and `UID EXPUNGE`s exactly its UIDs and needs UIDPLUS: never a plain
  EXPUNGE, which would also remove messages another client had marked `\\Deleted`.
- A trash-delete with no Trash mailbox is refused, never turned into a permanent one.
- A person is only ever asked about UIDs that exist when asked: the rest of a request (UIDs
  already gone, or not yet given out) is left out of the plan, and a request none of whose
  UIDs exist is refused. UIDs are never reused within one UIDVALIDITY, so no approval, however
  replayed, can reach mail that arrives later.
- UIDs gone by the time an approved change runs are reported as missing, and what ran is read from
  the server's own answers (COPYUID; the FETCH answers of the STORE before an expunge), never
  taken from the request. A copy skips what the destination already holds (`changes.copies`).
- A move never duplicates: a message whose Message-ID the destination already holds is not moved, exactly as a
  copy skips it, and it stays in the source (reported `already_present`). A mail client's user who moves a
  message expects it in the destination once and nothing lost; the destination already has it, and removing
  the source on the strength of a Message-ID (which the sender wrote, and which anyone can copy from a
  References header) could expunge the only copy of a different message. Leaving it costs one delete, which
  the answer names. A trash-delete still moves everything: a delete must empty the source, and a second copy
  in Trash costs nothing.
- A change into the mailbox it comes from is refused; INBOX is one mailbox in any case (RFC 3501).
- Every UID set goes to the server compressed into ranges (`uid_sets.compress`).
"""

from __future__ import annotations

import imaplib
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Literal

from imapclient.exceptions import IMAPClientError

from imap_mcp.sealing import Scope, Target

from ..errors import MailboxError
from ..imap.answers import server_text
from ..imap.by_message_id import message_ids_of
from ..imap.existence import existing_uids
from ..imap.fetch import add_flags_reporting, take_response_codes
from ..imap.lookup import MessageSelection, check_selection
from ..imap.mailboxes import mailbox_with_role, missing_role_advice
from ..imap.message_ids import StaleMessageId, canonical_name
from ..imap.permanent_flags import keeps
from ..imap.pool import NoSuchMailbox
from ..imap.session import Session
from ..imap.uid_sets import compress, expand
from ..imap.uidvalidity import settle
from .copies import already_copied, held_in
from .facts import SourceFacts, read_facts

MessageOperation = Literal["trash", "delete_permanently", "move", "copy"]
#: the operations that skip a message whose Message-ID the destination holds (see the module's doc)
SKIPS_HELD: frozenset[MessageOperation] = frozenset({"copy", "move"})
DELETED = b"\\Deleted"
#: told (messages done, messages in all) after each batch of a change; answers whether to go on
AfterBatch = Callable[[int, int], bool]
#: messages per MOVE, COPY or UID EXPUNGE: progress is reported, and cancellation honoured, between batches
BATCH = 500


class ChangeRefused(MailboxError):
    """The change cannot run as asked; the message says why and what to do instead."""


class TargetChanged(ChangeRefused):
    """The mailbox is no longer in the state the approval was given for."""


@dataclass(frozen=True)
class PlannedMessageChange:
    """Exactly what a person is asked to approve: these UIDs of `source` (at its UIDVALIDITY), and where
    they go (`destination` at its UIDVALIDITY, if it has one)."""

    operation: MessageOperation
    account: str
    source: str
    source_uidvalidity: int
    uids: tuple[int, ...]
    destination: str | None = None
    destination_uidvalidity: int | None = None
    #: not part of the approval: a move by COPY then EXPUNGE (no MOVE) puts its copies in the destination from this
    #: UID on (its UIDNEXT when planned), which the approval ledger keeps for an attempt that finishes a dead one's
    floor: int | None = field(default=None, compare=False)
    #: not part of the approval: for a copy or a move, those of `uids` whose Message-ID the destination holds (not
    #: copied or moved: a move leaves them in the source)
    already_present: tuple[int, ...] = field(default=(), compare=False)
    #: not part of the approval: what the server said of the messages when planned, for the question (`facts`)
    facts: SourceFacts | None = field(default=None, compare=False)

    @property
    def target(self) -> Target:
        """What the approval is sealed to: the source and destination as scopes, the UIDs as items."""
        scopes = [Scope("source", self.source, (self.source_uidvalidity,))]
        if self.destination is not None:
            pinned = () if self.destination_uidvalidity is None else (self.destination_uidvalidity,)
            scopes.append(Scope("destination", self.destination, pinned))
        return Target(self.operation, self.account, tuple(scopes), self.uids)


@dataclass(frozen=True)
class ChangeReport:
    """What an executed change did: UIDs acted on, UIDs already gone, new UIDs in the destination,
    and (copy, move) UIDs not copied or moved because the destination already holds their Message-ID."""

    done: tuple[int, ...]
    missing: tuple[int, ...]
    new_uids: dict[int, int]
    destination_uidvalidity: int | None
    already_present: tuple[int, ...] = ()
    #: not changed because the call was cancelled between batches (the approval still covers them)
    not_run: tuple[int, ...] = ()
    #: what could not be recorded after the change ran (`changes.once`), and what that means for a replay
    problems: tuple[str, ...] = ()


def has(client: Session, capability: str) -> bool:
    return bool(client.has_capability(capability))


_NO_MOVE = {
    "move": "a move cannot remove exactly these messages from the source mailbox. Nothing was changed; "
    "move_messages with mode 'copy' still works (the originals stay where they are).",
    "trash": "moving them to Trash cannot remove exactly these messages from the source mailbox, and a "
    "permanent delete would need UIDPLUS too. Nothing was changed; delete them with another mail client, or "
    "copy them with move_messages mode 'copy'.",
}


def require_move_support(client: Session, operation: MessageOperation) -> None:
    if not (has(client, "MOVE") or has(client, "UIDPLUS")):
        raise ChangeRefused(f"The IMAP server offers neither MOVE nor UIDPLUS, so {_NO_MOVE[operation]}")


def require_uid_expunge(client: Session) -> None:
    if not has(client, "UIDPLUS"):
        raise ChangeRefused(
            "The IMAP server does not offer UIDPLUS, so a permanent delete cannot expunge exactly these messages "
            "(a plain EXPUNGE would also remove messages other clients marked \\Deleted). Nothing was changed; "
            "delete with permanent: false to move them to Trash instead."
        )


def trash_mailbox(client: Session) -> str:
    """The mailbox with the Trash role (`mailbox_with_role`); refused when there is none."""
    found = mailbox_with_role(client, "trash")
    if found is None:
        raise ChangeRefused(
            "This account has no Trash mailbox, so the messages cannot be moved there. Nothing was changed. "
            f"{missing_role_advice(client, 'trash')} Or delete with permanent: true (which cannot be undone)."
        )
    return found


def open_source(client: Session, messages: MessageSelection, readonly: bool) -> int:
    """Select (or EXAMINE) the messages' mailbox; its UIDVALIDITY, or `StaleMessageId` if it changed."""
    if readonly:
        return examine_source(client, messages)
    return select_source(client, messages).uidvalidity


@dataclass(frozen=True)
class Selected:
    """A mailbox selected read-write: its UIDVALIDITY and the flags it says it keeps (PERMANENTFLAGS; None when
    it did not say, which RFC 3501 reads as every flag)."""

    uidvalidity: int
    permanent_flags: frozenset[bytes] | None

    def keeps(self, flag: bytes) -> bool:
        """Whether the mailbox says it keeps `flag` (`imap.permanent_flags.keeps`: the reading check shares)."""
        return keeps(self.permanent_flags, flag)


def select_source(client: Session, messages: MessageSelection) -> Selected:
    """SELECT the messages' mailbox read-write; `StaleMessageId` if its UIDVALIDITY changed."""
    try:
        response = client.select_folder(messages.mailbox)
    except imaplib.IMAP4.abort:
        raise  # the connection dropped: the pool's business (it runs the operation again on a new one)
    except imaplib.IMAP4.error:
        raise NoSuchMailbox(
            f"Mailbox {messages.mailbox!r} cannot be opened for changes; check the name with list_mailboxes."
        ) from None
    uidvalidity = int(response[b"UIDVALIDITY"])
    check_selection(messages, uidvalidity)
    permanent = response.get(b"PERMANENTFLAGS")
    return Selected(uidvalidity, frozenset(permanent) if permanent is not None else None)


def same_mailbox(first: str, second: str) -> bool:
    """Whether two names name one mailbox: INBOX in any case (RFC 3501), every other name exactly."""
    return first == second or first.upper() == second.upper() == "INBOX"


def plan_message_change(
    client: Session,
    account: str,
    selection: MessageSelection,
    operation: MessageOperation,
    destination: str | None,
    with_facts: bool = False,
) -> PlannedMessageChange:
    """The exact plan for moving/copying/deleting `selection` now, or `ChangeRefused`; `with_facts`: with what the
    server says of the messages (one FETCH more), for a question about to be shown.

    The plan holds only those of the requested UIDs that exist now (see the module docstring).
    """
    uidvalidity, exists = examine_counted(client, selection)
    present, by_message_id = _present(client, selection, operation)
    facts = read_facts(client, present, exists) if with_facts else None
    return plan_present(
        client,
        account,
        replace(selection, uidvalidity=uidvalidity, uids=present),
        operation,
        destination,
        by_message_id,
        facts,
    )


def examine_source(client: Session, selection: MessageSelection) -> int:
    """EXAMINE the selection's mailbox (read-only, one command); its UIDVALIDITY, `StaleMessageId` if it changed."""
    return examine_counted(client, selection)[0]


def examine_counted(client: Session, selection: MessageSelection) -> tuple[int, int | None]:
    """`examine_source`, and how many messages the mailbox holds (its EXISTS; None when it said none)."""
    try:
        settle(client, selection.mailbox)
        response = client.select_folder(selection.mailbox, readonly=True)
        uidvalidity = int(response[b"UIDVALIDITY"])
    except imaplib.IMAP4.abort:
        raise  # the connection dropped: not a mailbox that cannot be opened
    except IMAPClientError as exc:
        raise NoSuchMailbox(
            f"Mailbox {selection.mailbox!r} cannot be opened ({server_text(exc)}); check the name with "
            "list_mailboxes and pass it exactly as listed."
        ) from None
    check_selection(selection, uidvalidity)
    exists = response.get(b"EXISTS")
    return uidvalidity, exists if isinstance(exists, int) else None


def _present(
    client: Session, selection: MessageSelection, operation: MessageOperation
) -> tuple[tuple[int, ...], dict[int, str]]:
    """Which of the selection's UIDs the examined mailbox holds (`ChangeRefused` when none), and for a copy or a
    move their Message-IDs, read by the same FETCH."""
    present: set[int] = set()
    by_message_id: dict[int, str] = {}
    if operation in SKIPS_HELD:
        by_message_id = message_ids_of(client, selection.uids, present)
    if not present:
        # none found by that FETCH, or none asked: Cyrus answers nothing to a FETCH whose set also names UIDs from
        # 2^31 up, which `existing_uids` asks about apart
        present = existing_uids(client, selection.uids)
        by_message_id = message_ids_of(client, present) if operation in SKIPS_HELD and present else {}
    if not present:
        raise ChangeRefused(
            f"None of these messages exist in {selection.mailbox!r} ({_named(selection.uids)}): they were "
            "deleted or moved, or those UIDs were never given out. Nothing was changed and nobody was asked; "
            "search again (search_messages) for the current ids."
        )
    return tuple(sorted(present)), by_message_id


def plan_present(
    client: Session,
    account: str,
    present: MessageSelection,
    operation: MessageOperation,
    destination: str | None,
    by_message_id: dict[int, str] | None = None,
    facts: SourceFacts | None = None,
) -> PlannedMessageChange:
    """The plan for `present`, UIDs the source (examined now, at `present.uidvalidity`) holds: the destination's
    state, and for a copy or a move which of them the destination holds already (`by_message_id`: their
    Message-IDs, when the caller fetched them); `facts` (what the server said of them) kept with it for the
    question."""
    assert present.uidvalidity is not None
    if operation == "delete_permanently":
        require_uid_expunge(client)
        destination = None
    if operation in ("trash", "move"):
        require_move_support(client, operation)
    if operation == "trash":
        destination = trash_mailbox(client)
        if same_mailbox(destination, present.mailbox):
            raise ChangeRefused(
                f"These messages are already in {destination!r}. Nothing was changed; to remove them for good, "
                "delete them with permanent: true."
            )
    if operation in ("move", "copy"):
        destination = canonical_name(destination or "")
        if same_mailbox(destination, present.mailbox):
            raise ChangeRefused(
                f"The messages are already in {present.mailbox!r} ({destination!r} is the same mailbox). "
                "Nothing was changed; choose another destination."
            )
    plan = PlannedMessageChange(
        operation, account, present.mailbox, present.uidvalidity, present.uids, destination, facts=facts
    )
    if destination is None:
        return plan
    if operation not in SKIPS_HELD:
        uidvalidity, uidnext = destination_state(client, destination)
        return replace(plan, destination_uidvalidity=uidvalidity, floor=None if has(client, "MOVE") else uidnext)
    if by_message_id is None:
        by_message_id = message_ids_of(client, present.uids)
    held = held_in(client, destination, by_message_id)
    plan = replace(plan, destination_uidvalidity=held.uidvalidity, already_present=tuple(sorted(held.uids)))
    if operation == "move" and not has(client, "MOVE"):
        plan = replace(plan, floor=held.uidnext or destination_state(client, destination)[1])
    return plan


def destination_state(client: Session, mailbox: str) -> tuple[int, int | None]:
    """The destination's UIDVALIDITY and UIDNEXT (one STATUS), or `NoSuchMailbox`."""
    try:
        settle(client, mailbox)
        status = client.folder_status(mailbox, [b"UIDVALIDITY", b"UIDNEXT"])
    except imaplib.IMAP4.abort:
        raise
    except imaplib.IMAP4.error as exc:  # what imapclient raises for a missing mailbox, too
        raise NoSuchMailbox(_no_destination(mailbox)) from exc
    uidnext = status.get(b"UIDNEXT")
    return int(status[b"UIDVALIDITY"]), int(uidnext) if uidnext is not None else None


def _no_destination(mailbox: str) -> str:
    return (
        f"The mailbox {mailbox!r} does not exist or cannot hold messages; list_mailboxes shows the names "
        "(create it first with manage_mailbox if you meant a new one)."
    )


def _named(uids: tuple[int, ...]) -> str:
    shown = compress(uids)
    return f"UIDs {shown}" if len(shown) <= 200 else f"{len(uids)} UIDs"


def left_out(uids: tuple[int, ...], kept: AbstractSet[int]) -> tuple[int, ...]:
    """Those of `uids` not in `kept`, in their order: one set lookup per UID (linear, never ids times messages)."""
    return tuple(uid for uid in uids if uid not in kept)


@dataclass(frozen=True)
class Execution:
    """How one approved change runs besides its plan: where a dead attempt of the same approval got to (`floor`:
    the destination's UIDNEXT before it began, from the approval ledger), and what to tell after each batch
    (`after_batch(done, total)`, which stops the rest by answering False)."""

    floor: int | None = None
    after_batch: AfterBatch | None = None


def execute_message_change(client: Session, plan: PlannedMessageChange, execution: Execution) -> ChangeReport:
    """Run the approved change on exactly `plan`, observed a moment ago in the same call; `TargetChanged` if the
    source was re-created since. It is not observed again: what ran is read from the server's answers (COPYUID,
    the FETCH answers of a STORE), and what was gone by then is reported missing.

    Running it once per approval is the approval ledger's job (`changes.once`); a replay of a change that ran
    finds its messages gone (a move, a delete) or in the destination (a copy, skipped by Message-ID).
    """
    source = MessageSelection(plan.source, plan.source_uidvalidity, plan.uids)
    readonly = plan.operation == "copy"
    try:
        open_source(client, source, readonly=readonly)
    except (NoSuchMailbox, StaleMessageId) as exc:
        raise TargetChanged(
            f"{exc} The change was approved for another state of the mailbox; nothing was changed."
        ) from None
    skipped = plan.already_present
    completed: tuple[int, ...] = ()
    if execution.floor is not None and plan.destination and plan.operation != "copy":
        # a dead attempt of this approval copied these above its floor (a move without MOVE): finish, never copy again
        completed = _copied_before(client, source, plan.uids, plan.destination, execution.floor - 1, readonly)
    to_do = left_out(left_out(plan.uids, set(skipped)), set(completed))
    done, new_uids, not_run = _run_in_batches(client, plan, to_do, execution.after_batch)
    if completed:
        expunge_exactly(client, compress(completed))
    missing = left_out(to_do, set(done) | set(not_run))
    # what a dead attempt copied is held by the destination, so planned as present: it was moved, not skipped
    skipped = left_out(skipped, set(completed))
    return ChangeReport(
        tuple(sorted(set(done) | set(completed))), missing, new_uids, plan.destination_uidvalidity, skipped, not_run
    )


def _run_in_batches(
    client: Session, plan: PlannedMessageChange, uids: tuple[int, ...], after_batch: AfterBatch | None
) -> tuple[tuple[int, ...], dict[int, int], tuple[int, ...]]:
    """`_run` on `uids`, `BATCH` at a time: the UIDs it changed, their new UIDs, and the UIDs not run (stopped)."""
    done: list[int] = []
    new_uids: dict[int, int] = {}
    ran = 0
    for start in range(0, len(uids), BATCH):
        batch = uids[start : start + BATCH]
        changed, moved_to = _run(client, plan, batch)
        done.extend(changed)
        new_uids.update(moved_to)
        ran += len(batch)
        if after_batch is not None and not after_batch(ran, len(uids)):
            break
    return tuple(done), new_uids, uids[ran:]


def _copied_before(
    client: Session, source: MessageSelection, uids: tuple[int, ...], destination: str, above: int, readonly: bool
) -> tuple[int, ...]:
    """Those of `uids` whose Message-ID `destination` holds above UID `above`; the source is selected again."""
    found = already_copied(client, uids, destination, above)
    open_source(client, source, readonly=readonly)
    return tuple(sorted(found))


def _run(client: Session, plan: PlannedMessageChange, uids: tuple[int, ...]) -> tuple[list[int], dict[int, int]]:
    """One batch: the UIDs it changed, as the server's answers say, and their UIDs in the destination."""
    uid_set = compress(uids)
    _take_copyuid(client)
    if plan.operation == "delete_permanently":
        return sorted(expunge_exactly(client, uid_set)), {}
    assert plan.destination is not None
    if not has(client, "UIDPLUS"):  # no COPYUID to say what was copied: ask which exist first
        uids = tuple(sorted(existing_uids(client, uids)))
        uid_set = compress(uids)
        if not uids:
            return [], {}
    if plan.operation == "copy":
        client.copy(uid_set, plan.destination)
    elif has(client, "MOVE"):
        client.move(uid_set, plan.destination)
    else:
        client.copy(uid_set, plan.destination)
    moved_to = _take_copyuid(client)
    changed = sorted(moved_to) if has(client, "UIDPLUS") else list(uids)
    if plan.operation != "copy" and not has(client, "MOVE") and changed:
        expunge_exactly(client, compress(changed))
    return changed, moved_to


def expunge_exactly(client: Session, uids: list[int] | str) -> set[int]:
    """`\\Deleted` + `UID EXPUNGE` of exactly `uids` in the selected mailbox (never a plain EXPUNGE); the UIDs
    that were there, from the STORE's FETCH answers."""
    uid_set = uids if isinstance(uids, str) else compress(uids)
    stored = add_flags_reporting(client, uid_set, [DELETED])
    client.uid_expunge(uid_set)
    return stored


def _take_copyuid(client: Session) -> dict[int, int]:
    """Source UID → destination UID from the COPYUID codes since the last call (RFC 4315).

    imapclient returns neither COPY's nor MOVE's COPYUID (MOVE sends it untagged), but imaplib
    keeps every response code it saw; this reads and clears that record.
    """
    mapping: dict[int, int] = {}
    for raw in take_response_codes(client, "COPYUID"):
        _, old, new = raw.decode("ascii", "replace").split()
        mapping.update(zip(expand(old), expand(new), strict=True))
    return mapping
