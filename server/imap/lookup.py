"""From what a tool was given to the messages it may act on.

Tools take message ids (`imap.…`, see `message_ids`), or — deprecated, for compatibility — a
mailbox name with UIDs. `resolve_selections` turns either form into `MessageSelection`s, one per mailbox;
`check_selection` compares a target with the UIDVALIDITY the server reports now and refuses a
stale id (`StaleMessageId`), so a tool never acts on whatever message has that UID today.
A deprecated mailbox+uid pair has no UIDVALIDITY of its own and is taken to mean "now".
UIDs are always UIDs: a sequence number or a range such as `1:*` is never accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .message_ids import MAX_UID, InvalidMessageId, MessageRef, check_uidvalidity, decode_id
from .session import Session
from .uidvalidity import settle, uidvalidity_in


@dataclass(frozen=True)
class MessageSelection:
    """UIDs in one mailbox; `uidvalidity` is None when they came as deprecated mailbox+uid."""

    mailbox: str
    uidvalidity: int | None
    uids: tuple[int, ...]


def _checked_uid(uid: object) -> int:
    if isinstance(uid, bool) or not isinstance(uid, int) or not 1 <= uid <= MAX_UID:
        raise InvalidMessageId(
            f"{uid!r} is not a UID: give a whole number from 1 to {MAX_UID} (ranges such as 1:* and sequence "
            "numbers are not accepted); better, pass the message id a tool returned."
        )
    return uid


def resolve_selections(
    ids: Sequence[str] | None, mailbox: str | None, uids: Sequence[int] | None
) -> list[MessageSelection]:
    """The targets named by `ids`, or by the deprecated `mailbox` + `uids`; exactly one form must be given.

    Ids are grouped by mailbox (and UIDVALIDITY) in the order they first appear; duplicates are dropped.
    """
    if ids and (mailbox is not None or uids):
        raise InvalidMessageId("Give either message ids or the deprecated mailbox + uid, not both.")
    if ids:
        groups: dict[tuple[str, int], dict[int, None]] = {}  # dicts as ordered sets: linear in the ids
        for raw in ids:
            ref = decode_id(raw)
            groups.setdefault((ref.mailbox, ref.uidvalidity), {})[ref.uid] = None
        return [MessageSelection(box, validity, tuple(found)) for (box, validity), found in groups.items()]
    if mailbox is None or not uids:
        raise InvalidMessageId("Give the message id a tool returned (or, deprecated, mailbox together with uid).")
    return [MessageSelection(mailbox, None, tuple(dict.fromkeys(_checked_uid(u) for u in uids)))]


def resolve_one(message_id: str | None, mailbox: str | None, uid: int | None) -> MessageSelection:
    """The single message named by `message_id`, or by the deprecated `mailbox` + `uid`."""
    targets = resolve_selections([message_id] if message_id else None, mailbox, [uid] if uid is not None else None)
    return targets[0]


def current_ref(client: Session, target: MessageSelection) -> MessageRef:
    """The one message of `target`, checked against its mailbox's UIDVALIDITY now (examines the mailbox)."""
    settle(client, target.mailbox)
    current = uidvalidity_in(client.select_folder(target.mailbox, readonly=True), "EXAMINE")
    return check_selection(target, current)[0]


def check_selection(target: MessageSelection, current_uidvalidity: int) -> list[MessageRef]:
    """The target's messages under the mailbox's current UIDVALIDITY; `StaleMessageId` if it changed."""
    refs = [MessageRef(target.mailbox, target.uidvalidity or current_uidvalidity, uid) for uid in target.uids]
    for ref in refs:
        check_uidvalidity(ref, current_uidvalidity)
    return refs
