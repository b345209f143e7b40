"""Search criteria as tools take them: `search_messages`'s filters, and the same filters as a `query`
argument of the tools that change messages by search instead of by id."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field

from imap_mcp.server.reading.search import SearchQuery

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
    """The criteria as a `SearchQuery`; a `ToolError` saying what to fix for dates it cannot search by."""
    for name, day in (("since", since), ("before", before)):
        if day is not None and day.year < MIN_YEAR:
            raise ToolError(f"{name} ({day}) is before {MIN_YEAR}: give a date from {MIN_YEAR}-01-01 on, YYYY-MM-DD.")
    if since and before and since >= before:
        raise ToolError(
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
        """The criteria as the search code takes them (`ToolError` for dates it cannot search by)."""
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
