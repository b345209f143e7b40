"""Setting flags, which needs no question (nothing is lost), reported as the server kept it.

Flags never include `\\Deleted`: marking a message for deletion is `delete_messages`, which a
person approves; a `\\Deleted` flag set here would let the next plain EXPUNGE by any client
remove it unasked. A server may take a flag and keep nothing, so what is reported is read back
afterwards (`imap.kept_flags`); a flag the mailbox says it does not keep (PERMANENTFLAGS) is
refused before anything is changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..imap.existence import existing_uids
from ..imap.kept_flags import read_flags
from ..imap.lookup import MessageSelection
from ..imap.permanent_flags import holds
from ..imap.session import Session
from ..imap.uid_sets import compress
from .messages import ChangeRefused, left_out, select_source


@dataclass(frozen=True)
class FlagReport:
    """What a flag change did, as read back: the flags now on every changed message (`added`) and on none of them
    (`removed`); `not_kept`: requested flags the server did not keep as asked on at least one message."""

    uidvalidity: int
    done: tuple[int, ...]
    missing: tuple[int, ...]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    not_kept: tuple[str, ...] = ()


def set_flags(client: Session, messages: MessageSelection, add: list[str], remove: list[str]) -> FlagReport:
    """Add then remove flags on the messages that still exist (the rest are reported missing), then read back."""
    selected = select_source(client, messages)
    refused = [flag for flag in add if not selected.keeps(flag.encode())]
    if refused:
        raise ChangeRefused(
            f"The mailbox {messages.mailbox!r} does not keep {', '.join(refused)} (the server's PERMANENTFLAGS do "
            "not include it): the server would accept it and keep nothing. Nothing was changed."
        )
    found = existing_uids(client, messages.uids)
    present = tuple(sorted(found))
    missing = left_out(messages.uids, found)
    if not present:
        return FlagReport(selected.uidvalidity, present, missing)
    uid_set = compress(present)
    if add:
        client.add_flags(uid_set, add, silent=True)
    if remove:
        client.remove_flags(uid_set, remove, silent=True)
    read = read_flags(client, present)
    now = [read.get(uid, frozenset()) for uid in present]
    added = tuple(f for f in add if all(holds(flags, f) for flags in now))
    removed = tuple(f for f in remove if not any(holds(flags, f) for flags in now))
    not_kept = tuple(f for f in (*add, *remove) if f not in added and f not in removed)
    return FlagReport(selected.uidvalidity, present, missing, added, removed, not_kept)
