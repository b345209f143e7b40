"""Changes by search: a query resolved to the exact UIDs a change may touch.

A tool given a `query` instead of ids asks the server which messages match it now (`UID SEARCH`
with the search code's own criteria) and from then on treats that UID set like ids: the person
is asked about that set, the approval is bound to it, and it runs on what is left of it. The set
travels with the question, sealed (`Pin`, carried as the approval's `pinned` value), so the
answer acts on the set the person was shown and not on what the query matches by then: mail that
arrives, or starts matching (a flag set), between question and answer is never touched, and a
replay acts only on what is left of the approved set. A pin counts only for the very call it was
made for (the same tool, operation, destination, mailbox and criteria: `pin_key`) and the same
UIDVALIDITY; anything else resolves the query afresh.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ..imap.existence import existing_uids
from ..imap.lookup import MessageSelection
from ..imap.message_ids import canonical_name
from ..imap.pool import examine
from ..imap.session import Session
from ..imap.uid_sets import compress, expand
from ..reading.search import SearchQuery, matching_uids
from .messages import ChangeRefused

#: the most messages one change by query may touch (as many as a call may name by id)
MAX_QUERY_MATCHES = 50_000


@dataclass(frozen=True)
class Pin:
    """The UID set a query resolved to when a person was asked, for the call named by `key`."""

    key: str
    uidvalidity: int
    uids: tuple[int, ...]

    def text(self) -> str:
        return f"{self.key}:{self.uidvalidity}:{compress(self.uids)}"

    @classmethod
    def parse(cls, text: str, key: str) -> Pin | None:
        """The pin `text` holds if it was made for the call named `key`; None for anything else."""
        found_key, _, rest = text.partition(":")
        uidvalidity, _, uid_set = rest.partition(":")
        if found_key != key or not uidvalidity.isdigit() or not uid_set:
            return None
        return cls(key, int(uidvalidity), tuple(expand(uid_set)))


def pin_key(tool: str, operation: str, destination: str | None, mailbox: str, query: SearchQuery) -> str:
    """A digest naming one call by query: another tool, operation, destination, mailbox or criteria differs."""
    named = [tool, operation, destination, mailbox, [key.decode("utf-8", "replace") for key in query.program()]]
    return hashlib.sha256(json.dumps(named).encode()).hexdigest()[:32]


def resolve_query(client: Session, mailbox: str, query: SearchQuery, pin: Pin | None = None) -> MessageSelection:
    """The messages of `mailbox` the change acts on: what is left of `pin` if it was made for this mailbox as
    it is (same UIDVALIDITY), else what `query` matches now. Empty when nothing does; `ChangeRefused` over
    `MAX_QUERY_MATCHES`."""
    return resolve_query_counted(client, mailbox, query, pin)[0]


def resolve_query_counted(
    client: Session, mailbox: str, query: SearchQuery, pin: Pin | None = None
) -> tuple[MessageSelection, int | None]:
    """`resolve_query`, and how many messages the mailbox holds (its EXISTS when examined; None if not said)."""
    examined = examine(client, mailbox)
    if pin is not None and pin.uidvalidity == examined.uidvalidity:
        uids = sorted(existing_uids(client, pin.uids))
    else:
        uids = sorted(matching_uids(client, query))
    if len(uids) > MAX_QUERY_MATCHES:
        raise ChangeRefused(
            f"The query matches {len(uids)} messages in {mailbox!r}; one call changes at most {MAX_QUERY_MATCHES}. "
            "Nothing was changed and nobody was asked: narrow it (since/before, from, subject) and repeat the call "
            "for each part."
        )
    return MessageSelection(canonical_name(mailbox), examined.uidvalidity, tuple(uids)), examined.counts[1]
