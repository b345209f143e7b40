"""What `search_messages` does beyond one IMAP search: the attachment filter, and the capabilities a filter
needs.

IMAP has no search key for "has an attachment" (RFC 3501/9051), so `has_attachment` is decided the way
every summary's `has_attachments` is (`parts.attachments` of the BODYSTRUCTURE): the other filters run on
the server first, then the BODYSTRUCTURE of each of their matches is fetched (`UID FETCH <set>
(BODYSTRUCTURE)`, one command per few thousand UIDs) and the matches filtered. That costs one structure per
candidate, so at most `MAX_ATTACHMENT_CANDIDATES` candidates are checked in one search (more is refused,
asking for a narrower search: dates, sender, size). A structure never changes under a UID, so each answer is
remembered (`AttachmentMemory`, at most `MAX_REMEMBERED` UIDs) and the next page, or the same search again,
fetches only the structures of new mail. Gmail's `has:attachment` (through `gmail_query`) is the server's own
answer where it exists; it is not used for `has_attachment`, whose meaning stays the same on every server.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ..errors import ArgumentError
from ..imap.fetch import fetch
from ..imap.pool import Examined
from ..imap.session import Session
from .parts import attachments, parse_structure

#: the most matches whose structure one search with has_attachment checks
MAX_ATTACHMENT_CANDIDATES = 20_000
#: the most UIDs whose "has an attachment" answer is remembered, over every mailbox
MAX_REMEMBERED = 200_000
#: the capability of Gmail's IMAP extensions, X-GM-RAW among them
GMAIL_EXTENSIONS = "X-GM-EXT-1"


class AttachmentMemory:
    """Whether each message has an attachment, by mailbox and UIDVALIDITY; the least recently used mailbox's
    answers are dropped first."""

    def __init__(self, max_uids: int = MAX_REMEMBERED) -> None:
        self._known: OrderedDict[tuple[str, int], dict[int, bool]] = OrderedDict()
        self._lock = threading.Lock()
        self._max_uids = max_uids

    def known(self, examined: Examined) -> dict[int, bool]:
        with self._lock:
            key = (examined.mailbox, examined.uidvalidity)
            found = self._known.setdefault(key, {})
            self._known.move_to_end(key)
            return dict(found)

    def keep(self, examined: Examined, answers: dict[int, bool]) -> None:
        with self._lock:
            key = (examined.mailbox, examined.uidvalidity)
            self._known.setdefault(key, {}).update(answers)
            self._known.move_to_end(key)
            while len(self._known) > 1 and sum(map(len, self._known.values())) > self._max_uids:
                self._known.popitem(last=False)


def _has_attachment(structure: object) -> bool:
    """As a summary says it (`summaries.fixed_part`); a structure no parser can read has none it can show."""
    try:
        return bool(structure and attachments(parse_structure(structure)))
    except Exception:  # hostile mail may break the parser in a way nobody listed
        return False


def with_attachment_state(
    client: Session, examined: Examined, ordered: Sequence[int], wanted: bool, memory: AttachmentMemory
) -> list[int]:
    """The UIDs of `ordered`, in its order, that have an attachment (`wanted`) or have none."""
    if len(ordered) > MAX_ATTACHMENT_CANDIDATES:
        raise ArgumentError(
            f"has_attachment checks each match of the other filters, and {len(ordered)} messages match them (at "
            f"most {MAX_ATTACHMENT_CANDIDATES} are checked in one search). Narrow the search with since/before, "
            "from, larger_than or another filter, then ask again."
        )
    known = memory.known(examined)
    if unknown := [uid for uid in ordered if uid not in known]:
        fetched = fetch(client, unknown, ["BODYSTRUCTURE"])
        found = {uid: _has_attachment(data.get(b"BODYSTRUCTURE")) for uid, data in fetched.items()}
        memory.keep(examined, found)
        known |= found
    return [uid for uid in ordered if uid in known and known[uid] == wanted]


def refuse_unsupported(client: Session, gmail_query: str | None) -> None:
    """An `ArgumentError` when a search asks for what this server does not offer (X-GM-RAW without X-GM-EXT-1),
    before anything is sent."""
    if gmail_query and not client.has_capability(GMAIL_EXTENSIONS):
        raise ArgumentError(
            "gmail_query uses Gmail's own search (X-GM-RAW), and this server does not offer it (it does not "
            f"announce {GMAIL_EXTENSIONS}). Use the other filters (from, to_or_cc, subject, text, has_attachment, "
            "larger_than, keyword, ...) instead."
        )
