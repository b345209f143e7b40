"""How tools take their arguments: message ids (one mailbox per change), the deprecated mailbox + UID forms, and
search criteria — `search_messages`'s filters, and the same filters as the `query` of the tools that change
messages by search instead of by id.

The deprecated way to name messages, a mailbox with UIDs instead of ids, is kept for clients written
against earlier email servers. Ids are better: they carry the mailbox's UIDVALIDITY, so a stale one is
refused; a mailbox + UID pair is taken to mean "that UID in the mailbox as it is now".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Annotated, Literal

from anyio import to_thread
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ArgumentError
from ..imap.lookup import MessageSelection, current_ref, resolve_one, resolve_selections
from ..imap.message_ids import MAX_UID, MessageRef
from ..imap.pool import ImapPool
from ..reading.search import SearchQuery

ConfirmToken = Annotated[
    str | None,
    Field(
        description="Only when a previous identical call returned a confirm_token because no dialog could be "
        "shown: pass that token to run the change."
    ),
]

DeprecatedMailbox = Annotated[
    str | None, Field(min_length=1, description="Deprecated: mailbox name, with uid(s), instead of id(s).")
]
DeprecatedUid = Annotated[int | None, Field(ge=1, le=MAX_UID, description="Deprecated: the IMAP UID, with mailbox.")]
DeprecatedUids = Annotated[
    list[Annotated[int, Field(ge=1, le=MAX_UID)]] | None,
    Field(min_length=1, max_length=50_000, description="Deprecated: IMAP UIDs (never ranges), with mailbox."),
]

#: the earliest year `since`/`before` accept; IMAP servers refuse (BAD) or mishandle far older dates
MIN_YEAR = 1900

SearchText = Annotated[
    str | None, Field(min_length=1, max_length=500, pattern=r"^[^\x00-\x1f\x7f]*$", description="Substring to match.")
]


def checked_search_query(
    sender: str | None,
    to: str | None,
    subject: str | None,
    text: str | None,
    since: dt.date | None,
    before: dt.date | None,
    unread_only: bool,
    flagged_only: bool,
    offset: int = 0,
    limit: int = 20,
) -> SearchQuery:
    """The criteria as a `SearchQuery`; an `ArgumentError` saying what to fix for dates it cannot search by."""
    for name, day in (("since", since), ("before", before)):
        if day is not None and day.year < MIN_YEAR:
            raise ArgumentError(
                f"{name} ({day}) is before {MIN_YEAR}: give a date from {MIN_YEAR}-01-01 on, YYYY-MM-DD."
            )
    if since and before and since >= before:
        raise ArgumentError(
            f"since ({since}) must be earlier than before ({before}): since is inclusive, before is exclusive."
        )
    return SearchQuery(sender, to, subject, text, since, before, unread_only, flagged_only, offset, limit)


class MessageQuery(BaseModel):
    """The messages a change acts on, chosen by search_messages's filters (all must hold) in one mailbox."""

    # a misspelt filter must not silently widen the search to every message
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mailbox: Annotated[str, Field(min_length=1, description="The mailbox to search, as list_mailboxes names it.")] = (
        "INBOX"
    )
    sender: Annotated[SearchText, Field(alias="from", description="Text in the From header.")] = None
    to: Annotated[SearchText, Field(description="Text in the To header.")] = None
    subject: Annotated[SearchText, Field(description="Text in the subject.")] = None
    text: Annotated[SearchText, Field(description="Text anywhere in the message, headers or body.")] = None
    since: Annotated[dt.date | None, Field(description="Received on or after this day, YYYY-MM-DD.")] = None
    before: Annotated[dt.date | None, Field(description="Received before this day (exclusive), YYYY-MM-DD.")] = None
    unread_only: Annotated[bool, Field(description="Only messages not marked read.")] = False
    flagged_only: Annotated[bool, Field(description="Only flagged (starred) messages.")] = False

    def search(self) -> SearchQuery:
        """The criteria as the search code takes them (`ArgumentError` for dates it cannot search by)."""
        return checked_search_query(
            self.sender,
            self.to,
            self.subject,
            self.text,
            self.since,
            self.before,
            self.unread_only,
            self.flagged_only,
        )

    def criteria(self) -> tuple[tuple[str, str], ...]:
        """The criteria given, as (name, value) pairs in a fixed order, for a question to show."""
        pairs: list[tuple[str, str]] = []
        for name in ("sender", "to", "subject", "text", "since", "before"):
            value = getattr(self, name)
            if value is not None:
                pairs.append(("from" if name == "sender" else name, str(value)))
        for flag in ("unread_only", "flagged_only"):
            if getattr(self, flag):
                pairs.append((flag, "true"))
        return tuple(pairs)


Query = Annotated[
    MessageQuery | None,
    Field(
        description="Instead of ids: the messages matching these search_messages filters in one mailbox. The "
        "server resolves it to the exact messages before anything is asked or changed; mail that arrives or "
        "starts matching afterwards is not touched."
    ),
]

#: ids decoded on the event loop itself; more go to a worker thread (50,000 take long enough to stall other calls)
IDS_ON_LOOP = 100


async def one_mailbox_off_loop(
    ids: Sequence[str] | None, mailbox: str | None = None, uids: Sequence[int] | None = None
) -> MessageSelection:
    """`one_mailbox`, in a worker thread when there are many ids (a thread hop costs more than a few ids)."""
    if len(ids or ()) + len(uids or ()) <= IDS_ON_LOOP:
        return one_mailbox(ids, mailbox, uids)
    return await to_thread.run_sync(one_mailbox, ids, mailbox, uids)


def one_mailbox(
    ids: Sequence[str] | None, mailbox: str | None = None, uids: Sequence[int] | None = None
) -> MessageSelection:
    """The ids (or deprecated mailbox + uids) as one mailbox's UIDs; a change acts on one mailbox per call."""
    groups = resolve_selections(ids, mailbox, uids)
    if len(groups) != 1:
        names = ", ".join(sorted({g.mailbox for g in groups}))
        raise ArgumentError(
            f"The ids name messages in more than one mailbox (or mailbox generation): {names}. "
            "Change one mailbox's messages per call."
        )
    return groups[0]


def chosen_by_query(
    query: MessageQuery | None, ids: Sequence[str] | None, mailbox: str | None, uids: Sequence[int] | None
) -> MessageQuery | None:
    """`query` when the call names its messages by search; None when by ids; an `ArgumentError` for both."""
    if query is None:
        return None
    if ids or mailbox is not None or uids:
        raise ArgumentError(
            "Give either ids (or the deprecated mailbox + uids) or query, not both: query chooses the messages "
            "itself, in query.mailbox."
        )
    return query


async def one_ref(pool: ImapPool, id: str | None, mailbox: str | None, uid: int | None) -> MessageRef:
    """The one message named by `id`, or by the deprecated `mailbox` + `uid` (taken in the mailbox as it is now: its
    UIDVALIDITY is asked, which examines it)."""
    target = resolve_one(id, mailbox, uid)
    if target.uidvalidity is not None:
        return MessageRef(target.mailbox, target.uidvalidity, target.uids[0])
    return await pool.run(lambda client: current_ref(client, target))


BodyFormatArgument = Annotated[
    Literal["text", "markdown", "html"],
    Field(
        description="How body is written: text (sent as written), markdown (CommonMark) or html. Markdown and HTML "
        "go out as HTML (scripts, styles, images and anything remote removed) beside a plain-text alternative made "
        "from it; the person approving is told the text's length, never shown raw HTML."
    ),
]
SignatureArgument = Annotated[
    bool,
    Field(
        description="true: add the account's signature (SMTP_SIGNATURE) below the body after a '-- ' line, when the "
        "operator set one; false: leave it out of this message."
    ),
]
QuoteArgument = Annotated[
    bool,
    Field(
        description="true: quote the original below the reply as a mail client does ('On <date>, <name> wrote:' "
        "and '> ' lines, at most 200 lines; as get_message shows its text); false: send only body."
    ),
]
