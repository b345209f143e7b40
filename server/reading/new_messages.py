"""The messages that arrived since `list_new_messages` last looked, with the "last look" kept in the mailbox.

A message is new until this tool has listed it. Each call lists one page of the new messages (newest first
and summarised exactly as `search_messages` does it) and marks exactly the messages it lists with the
keyword `$ImapMcpListed`. Nothing is remembered by the server process or kept in a store: the mark is on the
message, so every replica sees the same last look, and:

- First look: while no message in the mailbox carries the mark (the tool never ran on it, the mailbox was
  re-created, or another client removed the keyword everywhere), every message there is new; the answer says
  so (`first_look`) and is paged like any other.
- Paging: a call skips `offset` new messages and lists `limit`; the skipped ones and those past the page stay
  new, so the next call lists them, after anything that arrived meanwhile (newest first). However calls and
  arrivals interleave, no message is listed twice and none is passed over for good.
- UIDVALIDITY: the mark belongs to the message, not to its UID, so a renumbered mailbox keeps its last look;
  the ids returned carry the UIDVALIDITY of the moment.
- A mark removed by another client makes that one message new again; an expunged message takes its mark
  with it and changes nothing for the others.
- Concurrent calls: with CONDSTORE (RFC 7162) the mark is a conditional STORE that leaves alone every
  message changed since the call read HIGHESTMODSEQ, and a call lists only what it marked itself, so two
  callers never both list a message. Without CONDSTORE (Courier) two calls at the same moment may both list it.
- Keywords must be kept: the mailbox is SELECTed read-write and its PERMANENTFLAGS must hold `\\*` or the
  keyword. Where they do not (keywords switched off, Dovecot Maildir's 26 keywords per mailbox used up, a
  read-only mailbox), the call is refused and nothing is listed or marked.
- An answer lost after its STORE (the connection broke) is not listed again: its messages are marked but were
  never shown. search_messages still finds them.
- `\\Seen` is never touched: summaries are fetched without bodies, so the person's reading state stays.
"""

from __future__ import annotations

import imaplib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from imapclient.exceptions import IMAPClientError
from pydantic import Field

from ..errors import MailboxError
from ..imap.answers import server_text
from ..imap.fetch import add_flags_unless_changed
from ..imap.mailbox_state import mailbox_state
from ..imap.permanent_flags import keeps
from ..imap.pool import Examined, NoSuchMailbox
from ..imap.session import Session
from ..imap.uid_sets import compress
from .fence import Fenced
from .search import SearchQuery, matching, newest_first, summarised_page
from .summaries import MessageSummary

#: the keyword on every message this tool has listed
LISTED = b"$ImapMcpListed"
NEW = SearchQuery(extra_keys=(b"UNKEYWORD", LISTED))
ALREADY_LISTED = SearchQuery(extra_keys=(b"KEYWORD", LISTED))


class KeywordsNotKept(MailboxError):
    """The mailbox cannot keep this server's keyword, so no last look can be recorded in it."""


class NewMessages(Fenced):
    mailbox: str
    first_look: bool = Field(
        description="True when no message here carried the mark of an earlier look (the first call on this "
        "mailbox, a re-created mailbox, or marks removed by another client): every message counted as new."
    )
    total: int = Field(description="How many messages were new when this call began, this page included.")
    offset: int
    messages: list[MessageSummary] = Field(
        description="The new messages this call listed, newest first; they are not listed as new again."
    )
    remaining: int = Field(
        description="New messages this call did not list (skipped by offset, past this page, or changed by "
        "another session while it ran, e.g. a concurrent call that listed them); call again for those still new."
    )


@dataclass(frozen=True)
class Look:
    """What one call found, before it marks anything."""

    examined: Examined
    unchanged_since: int | None  #: HIGHESTMODSEQ read before the search; None without CONDSTORE
    total: int
    first_look: bool
    offset: int
    page: list[MessageSummary]


def keeps_keyword(selected: dict[bytes, Any]) -> bool:
    """Whether a SELECT answer lets this session keep `LISTED` (absent PERMANENTFLAGS: all flags, RFC 3501)."""
    if b"READ-ONLY" in selected:
        return False
    return keeps(selected.get(b"PERMANENTFLAGS"), LISTED)


def select_for_marking(client: Session, mailbox: str) -> Examined:
    """SELECT `mailbox` read-write; `KeywordsNotKept` when it cannot keep `LISTED`."""
    try:
        selected = client.select_folder(mailbox)
    except imaplib.IMAP4.abort:
        raise  # the connection dropped: the pool's business, not a mailbox that cannot be opened
    except IMAPClientError as exc:
        raise NoSuchMailbox(
            f"Mailbox {mailbox!r} cannot be opened ({server_text(exc)}); check the name with list_mailboxes "
            "and pass it exactly as listed."
        ) from None
    if not keeps_keyword(selected):
        raise KeywordsNotKept(
            f"The server does not let mailbox {mailbox!r} keep a keyword of this server's own (it is read-only, "
            "or its PERMANENTFLAGS allow no new keywords), so list_new_messages cannot record what it has "
            "listed there. Nothing was listed or changed. Use search_messages with since: to find recent mail."
        )
    return Examined(mailbox, int(selected[b"UIDVALIDITY"]))


def _highest_modseq(client: Session, mailbox: str) -> int | None:
    state = mailbox_state(client, mailbox)
    return state.highestmodseq if state is not None and state.highestmodseq > 0 else None


def look(client: Session, mailbox: str, offset: int, limit: int) -> Look:
    """Find the new messages of `mailbox` and summarise one page of them; nothing is marked yet."""
    examined = select_for_marking(client, mailbox)
    unchanged_since = _highest_modseq(client, mailbox)
    ordered = newest_first(client, NEW)
    first_look = bool(ordered) and not matching(client, ALREADY_LISTED)
    page = summarised_page(client, examined, ordered, offset, limit)
    return Look(examined, unchanged_since, len(ordered), first_look, offset, page)


def mark_listed(client: Session, uids: Sequence[int], unchanged_since: int | None) -> set[int]:
    """Add `LISTED` to `uids`; the ones marked by this call (with CONDSTORE, only those unchanged since)."""
    if not uids:
        return set()
    uid_set = compress(uids)
    if unchanged_since is None:
        client.add_flags(uid_set, [LISTED], silent=True)
        return set(uids)
    return set(uids) - set(add_flags_unless_changed(client, uid_set, unchanged_since, [LISTED]))


def record(client: Session, found: Look) -> NewMessages:
    """Mark the look's page as listed; the answer holds only the messages this call marked."""
    marked = mark_listed(client, [m.uid for m in found.page], found.unchanged_since)
    listed = [m for m in found.page if m.uid in marked]
    return NewMessages(
        mailbox=found.examined.mailbox,
        first_look=found.first_look,
        total=found.total,
        offset=found.offset,
        messages=listed,
        remaining=found.total - len(listed),
    )


def list_new(client: Session, mailbox: str, offset: int, limit: int) -> NewMessages:
    """One page of the messages new in `mailbox`, newest first, marked as listed."""
    return record(client, look(client, mailbox, offset, limit))
