"""Moving, copying and deleting messages, exactly as approved.

Planning (`plan_message_change`) observes the mailbox's current state and returns the exact
`PlannedMessageChange` a person is asked about (its `target` is what the approval is sealed
to). Executing (`execute_message_change`) re-observes it and runs only if it is still that
plan, so nothing acts on a mailbox that was re-created in between.

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
- UIDs gone by the time an approved change runs are reported as missing, so replaying an
  executed approval does nothing; a replayed copy skips what it already copied
  (`changes.copies`).
- A change into the mailbox it comes from is refused; INBOX is one mailbox in any case (RFC 3501).
- Every UID set goes to the server compressed into ranges (`uid_sets.compress`).
"""

from __future__ import annotations

import imaplib
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from imapclient import IMAPClient

from imap_mcp.sealing import Scope, Target
from imap_mcp.server.changes.claims import Standing, claim_message_id, contend, expunge_exactly, release, stake
from imap_mcp.server.changes.copies import already_copied
from imap_mcp.server.errors import MailboxError
from imap_mcp.server.imap.existence import existing_uids as existing_uids  # re-exported: by_query, flags_drafts
from imap_mcp.server.imap.fetch import take_response_codes
from imap_mcp.server.imap.lookup import MessageSelection, check_selection
from imap_mcp.server.imap.mailboxes import mailbox_with_role, missing_role_advice
from imap_mcp.server.imap.message_ids import StaleMessageId
from imap_mcp.server.imap.pool import NoSuchMailbox, examine
from imap_mcp.server.imap.uid_sets import compress, expand
from imap_mcp.server.imap.uidvalidity import settle

MessageOperation = Literal["trash", "delete_permanently", "move", "copy"]
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
    and (copy only) UIDs not copied again because the destination already holds their Message-ID."""

    done: tuple[int, ...]
    missing: tuple[int, ...]
    new_uids: dict[int, int]
    destination_uidvalidity: int | None
    already_present: tuple[int, ...] = ()
    #: not changed because the call was cancelled between batches (the approval still covers them)
    not_run: tuple[int, ...] = ()


def has(client: IMAPClient, capability: str) -> bool:
    return bool(client.has_capability(capability))


_NO_MOVE = {
    "move": "a move cannot remove exactly these messages from the source mailbox. Nothing was changed; "
    "move_messages with mode 'copy' still works (the originals stay where they are).",
    "trash": "moving them to Trash cannot remove exactly these messages from the source mailbox, and a "
    "permanent delete would need UIDPLUS too. Nothing was changed; delete them with another mail client, or "
    "copy them with move_messages mode 'copy'.",
}


def require_move_support(client: IMAPClient, operation: MessageOperation) -> None:
    if not (has(client, "MOVE") or has(client, "UIDPLUS")):
        raise ChangeRefused(f"The IMAP server offers neither MOVE nor UIDPLUS, so {_NO_MOVE[operation]}")


def require_uid_expunge(client: IMAPClient) -> None:
    if not has(client, "UIDPLUS"):
        raise ChangeRefused(
            "The IMAP server does not offer UIDPLUS, so a permanent delete cannot expunge exactly these messages "
            "(a plain EXPUNGE would also remove messages other clients marked \\Deleted). Nothing was changed; "
            "delete with permanent: false to move them to Trash instead."
        )


def trash_mailbox(client: IMAPClient) -> str:
    """The mailbox with the Trash role (`mailbox_with_role`); refused when there is none."""
    found = mailbox_with_role(client, "trash")
    if found is None:
        raise ChangeRefused(
            "This account has no Trash mailbox, so the messages cannot be moved there. Nothing was changed. "
            f"{missing_role_advice(client, 'trash')} Or delete with permanent: true (which cannot be undone)."
        )
    return found


def open_source(client: IMAPClient, messages: MessageSelection, readonly: bool) -> int:
    """Select (or EXAMINE) the messages' mailbox; its UIDVALIDITY, or `StaleMessageId` if it changed."""
    if readonly:
        uidvalidity = examine(client, messages.mailbox).uidvalidity
    else:
        try:
            uidvalidity = int(client.select_folder(messages.mailbox)[b"UIDVALIDITY"])
        except imaplib.IMAP4.error:
            raise NoSuchMailbox(
                f"Mailbox {messages.mailbox!r} cannot be opened for changes; check the name with list_mailboxes."
            ) from None
    check_selection(messages, uidvalidity)
    return uidvalidity


def uidvalidity_of(client: IMAPClient, mailbox: str) -> int:
    try:
        settle(client, mailbox)
        status = client.folder_status(mailbox, [b"UIDVALIDITY"])
    except imaplib.IMAP4.error as exc:  # what imapclient raises for a missing mailbox, too
        raise NoSuchMailbox(
            f"The mailbox {mailbox!r} does not exist or cannot hold messages; list_mailboxes shows the names "
            "(create it first with manage_mailbox if you meant a new one)."
        ) from exc
    return int(status[b"UIDVALIDITY"])


def same_mailbox(first: str, second: str) -> bool:
    """Whether two names name one mailbox: INBOX in any case (RFC 3501), every other name exactly."""
    return first == second or first.upper() == second.upper() == "INBOX"


def canonical_name(name: str) -> str:
    """`INBOX` for any spelling of it, so ids and dialogs name it one way; other names unchanged."""
    return "INBOX" if name.upper() == "INBOX" else name


def plan_message_change(
    client: IMAPClient, account: str, selection: MessageSelection, operation: MessageOperation, destination: str | None
) -> PlannedMessageChange:
    """The exact plan for moving/copying/deleting `selection` now, or `ChangeRefused`.

    The plan holds only those of the requested UIDs that exist now (see the module docstring).
    """
    source_uidvalidity = open_source(client, selection, readonly=True)
    uids = uids_to_ask_about(client, selection)
    if operation == "delete_permanently":
        require_uid_expunge(client)
        destination = None
    if operation in ("trash", "move"):
        require_move_support(client, operation)
    if operation == "trash":
        destination = trash_mailbox(client)
        if same_mailbox(destination, selection.mailbox):
            raise ChangeRefused(
                f"These messages are already in {destination!r}. Nothing was changed; to remove them for good, "
                "delete them with permanent: true."
            )
    if operation in ("move", "copy"):
        destination = canonical_name(destination or "")
        if same_mailbox(destination, selection.mailbox):
            raise ChangeRefused(
                f"The messages are already in {selection.mailbox!r} ({destination!r} is the same mailbox). "
                "Nothing was changed; choose another destination."
            )
    return PlannedMessageChange(
        operation=operation,
        account=account,
        source=selection.mailbox,
        source_uidvalidity=source_uidvalidity,
        uids=uids,
        destination=destination,
        destination_uidvalidity=uidvalidity_of(client, destination) if destination else None,
    )


def uids_to_ask_about(client: IMAPClient, selection: MessageSelection) -> tuple[int, ...]:
    """Those of the selection's UIDs the selected mailbox holds now; `ChangeRefused` when it holds none."""
    present = tuple(sorted(existing_uids(client, selection.uids)))
    if not present:
        raise ChangeRefused(
            f"None of these messages exist in {selection.mailbox!r} ({_named(selection.uids)}): they were "
            "deleted or moved, or those UIDs were never given out. Nothing was changed and nobody was asked; "
            "search again (search_messages) for the current ids."
        )
    return present


def _named(uids: tuple[int, ...]) -> str:
    shown = compress(uids)
    return f"UIDs {shown}" if len(shown) <= 200 else f"{len(uids)} UIDs"


def left_out(uids: tuple[int, ...], kept: AbstractSet[int]) -> tuple[int, ...]:
    """Those of `uids` not in `kept`, in their order: one set lookup per UID (linear, never ids times messages)."""
    return tuple(uid for uid in uids if uid not in kept)


def execute_message_change(
    client: IMAPClient, target: PlannedMessageChange, claim_lifetime: float, after_batch: AfterBatch | None = None
) -> ChangeReport:
    """Run the approved change on exactly `target`; `TargetChanged` if the mailboxes moved on.

    A move, copy or trash-delete first claims the destination (`changes.claims`): an attempt
    that does not hold the claim raises `ChangeInProgress` and changes nothing. The change runs in
    batches of `BATCH` messages; `after_batch(done, total)` is told after each and stops the rest
    by answering False (each batch is one command, so none is left half-done).
    """
    source = MessageSelection(target.source, target.source_uidvalidity, target.uids)
    try:
        open_source(client, source, readonly=True)
        destination_uidvalidity = uidvalidity_of(client, target.destination) if target.destination else None
    except (NoSuchMailbox, StaleMessageId) as exc:
        raise TargetChanged(
            f"{exc} The change was approved for another state of the mailbox; nothing was changed."
        ) from None
    if destination_uidvalidity != target.destination_uidvalidity:
        raise TargetChanged(
            f"The mailbox {target.destination!r} was re-created since the change was approved. Nothing was "
            "changed; call the tool again to be asked anew."
        )
    claim = stake(client, target.destination, claim_message_id(target.target)) if target.destination else None
    if claim is None:
        return _change(client, target, Standing(floor=None), after_batch)
    try:
        return _change(client, target, contend(client, claim, claim_lifetime), after_batch)
    finally:
        release(client, claim)


def _change(
    client: IMAPClient, target: PlannedMessageChange, standing: Standing, after_batch: AfterBatch | None
) -> ChangeReport:
    """The change itself, skipping what an earlier attempt already did."""
    source = MessageSelection(target.source, target.source_uidvalidity, target.uids)
    readonly = target.operation == "copy"
    open_source(client, source, readonly=readonly)
    found = existing_uids(client, target.uids)
    present = tuple(sorted(found))
    missing = left_out(target.uids, found)
    done_before: tuple[int, ...] = ()
    if present and target.destination and (readonly or standing.floor is not None):
        # a copy skips what the destination holds; a move completes what a dead attempt copied above its claim
        above = 0 if readonly else standing.floor or 0
        done_before = _copied_before(client, source, present, target.destination, above, readonly)
    to_do = left_out(present, set(done_before))
    new_uids, ran = _run_in_batches(client, target, to_do, after_batch)
    not_run = left_out(to_do, set(ran))
    if done_before and not readonly:
        expunge_exactly(client, compress(done_before))
        done = left_out(present, set(not_run))
        return ChangeReport(done, missing, new_uids, target.destination_uidvalidity, not_run=not_run)
    return ChangeReport(ran, missing, new_uids, target.destination_uidvalidity, done_before, not_run)


def _run_in_batches(
    client: IMAPClient, target: PlannedMessageChange, uids: tuple[int, ...], after_batch: AfterBatch | None
) -> tuple[dict[int, int], tuple[int, ...]]:
    """`_run` on `uids`, `BATCH` at a time: the new UIDs, and the UIDs it ran on (all, unless stopped)."""
    new_uids: dict[int, int] = {}
    ran: list[int] = []
    for start in range(0, len(uids), BATCH):
        batch = uids[start : start + BATCH]
        new_uids.update(_run(client, target, batch))
        ran.extend(batch)
        if after_batch is not None and not after_batch(len(ran), len(uids)):
            break
    return new_uids, tuple(ran)


def all_copied_already(client: IMAPClient, target: PlannedMessageChange) -> bool:
    """Whether `target` is a copy whose every message the destination already holds: nothing to ask about."""
    if target.operation != "copy":
        return False
    source = MessageSelection(target.source, target.source_uidvalidity, target.uids)
    open_source(client, source, readonly=True)
    copied = _copied_before(client, source, target.uids, target.destination or "", 0, readonly=True)
    return len(copied) == len(target.uids)


def _copied_before(
    client: IMAPClient, source: MessageSelection, uids: tuple[int, ...], destination: str, above: int, readonly: bool
) -> tuple[int, ...]:
    """Those of `uids` whose Message-ID `destination` holds above UID `above`; the source is selected again."""
    found = already_copied(client, uids, destination, above)
    open_source(client, source, readonly=readonly)
    return tuple(sorted(found))


def _run(client: IMAPClient, target: PlannedMessageChange, uids: tuple[int, ...]) -> dict[int, int]:
    uid_set = compress(uids)
    _take_copyuid(client)
    if target.operation == "delete_permanently":
        expunge_exactly(client, uid_set)
        return {}
    assert target.destination is not None
    if target.operation == "copy":
        client.copy(uid_set, target.destination)
    elif has(client, "MOVE"):
        client.move(uid_set, target.destination)
    else:
        client.copy(uid_set, target.destination)
        expunge_exactly(client, uid_set)
    return _take_copyuid(client)


def _take_copyuid(client: IMAPClient) -> dict[int, int]:
    """Source UID → destination UID from the COPYUID codes since the last call (RFC 4315).

    imapclient returns neither COPY's nor MOVE's COPYUID (MOVE sends it untagged), but imaplib
    keeps every response code it saw; this reads and clears that record.
    """
    mapping: dict[int, int] = {}
    for raw in take_response_codes(client, "COPYUID"):
        _, old, new = raw.decode("ascii", "replace").split()
        mapping.update(zip(expand(old), expand(new), strict=True))
    return mapping
