"""`search_messages`'s filters beyond the ones the query-taking tools share (`arguments.MessageQuery`): the
other address headers, size, keywords, answered and draft state, attachments, order, several mailboxes and
Gmail's own search. Each is one typed argument here, so the tool's signature stays one line per argument."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from ..errors import ArgumentError
from ..imap.permanent_flags import KEYWORD
from ..reading.search import SearchQuery
from ..reading.search_across import MAX_MAILBOXES

#: the largest size IMAP's LARGER/SMALLER take (a number, RFC 9051: 63 bits; far above any message)
MAX_BYTES = 2**53

Cc = Annotated[
    str | None,
    Field(min_length=1, max_length=500, pattern=r"^[^\x00-\x1f\x7f]*$", description="Text in the Cc header."),
]
Bcc = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=500,
        pattern=r"^[^\x00-\x1f\x7f]*$",
        description="Text in the Bcc header (only sent mail and drafts usually keep one).",
    ),
]
ToOrCc = Annotated[
    str | None,
    Field(min_length=1, max_length=500, pattern=r"^[^\x00-\x1f\x7f]*$", description="Text in the To or the Cc header."),
]
LargerThan = Annotated[
    int | None, Field(ge=0, le=MAX_BYTES, description="Only messages larger than this many bytes (whole message).")
]
SmallerThan = Annotated[
    int | None, Field(ge=1, le=MAX_BYTES, description="Only messages smaller than this many bytes (whole message).")
]
Keyword = Annotated[
    str | None,
    Field(
        pattern=f"^{KEYWORD.pattern}$",
        description="Only messages carrying this keyword (e.g. $Label1; letters, digits and $_.-+&', at most 64; "
        "compared as the server compares keywords, which IMAP says is without regard to case).",
    ),
]
NotKeyword = Annotated[
    str | None,
    Field(pattern=f"^{KEYWORD.pattern}$", description="Only messages not carrying this keyword (as keyword)."),
]
Answered = Annotated[
    bool | None, Field(description="true: only messages marked answered (\\Answered); false: only those not.")
]
Draft = Annotated[bool | None, Field(description="true: only messages marked draft (\\Draft); false: only those not.")]
HasAttachment = Annotated[
    bool | None,
    Field(
        description="true: only messages with an attachment (as has_attachments in a summary says); false: only "
        "those without. Checked on each match of the other filters (at most 20,000 of them: narrow the search "
        "when more match)."
    ),
]
Order = Annotated[
    Literal["newest", "oldest"],
    Field(description="newest (default) or oldest first, by the date the server received each message."),
]
Mailboxes = Annotated[
    list[Annotated[str, Field(min_length=1)]] | None,
    Field(
        min_length=1,
        max_length=MAX_MAILBOXES,
        description='Search several mailboxes as one instead of mailbox: ["*"] for every mailbox of your own, or '
        'names and roles ("inbox", "sent", "drafts", "archive", "trash", "junk", "all", "flagged", in lower case). '
        "One exact total, one order (by the date received), paged by offset (offset + limit at most 1,000).",
    ),
]
GmailQuery = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=500,
        pattern=r"^[^\x00-\x1f\x7f]*$",
        description="Gmail's own search syntax (X-GM-RAW, e.g. 'has:attachment label:work'), ANDed with the "
        "other filters; only on servers that offer it (Gmail: X-GM-EXT-1), refused elsewhere.",
    ),
]


@dataclass(frozen=True)
class More:
    """The filters that are IMAP search keys, as the tool takes them."""

    cc: str | None = None
    bcc: str | None = None
    to_or_cc: str | None = None
    larger_than: int | None = None
    smaller_than: int | None = None
    keyword: str | None = None
    not_keyword: str | None = None
    answered: bool | None = None
    draft: bool | None = None


def with_more_filters(
    query: SearchQuery,
    more: More,
    *,
    has_attachment: bool | None = None,
    order: str = "newest",
    gmail_query: str | None = None,
) -> SearchQuery:
    """`query` with these filters too; an `ArgumentError` saying what to fix when no message could match them."""
    larger, smaller = more.larger_than, more.smaller_than
    if larger is not None and smaller is not None and smaller <= larger + 1:
        raise ArgumentError(
            f"larger_than ({larger}) and smaller_than ({smaller}) leave no size between them (both are "
            "exclusive): make smaller_than at least larger_than + 2."
        )
    if more.keyword and more.not_keyword and more.keyword.lower() == more.not_keyword.lower():
        raise ArgumentError(
            f"keyword and not_keyword are both {more.keyword!r}: no message can match; give one of them."
        )
    return dataclasses.replace(
        query,
        **dataclasses.asdict(more),
        has_attachment=has_attachment,
        oldest_first=order == "oldest",
        gmail_query=gmail_query,
    )
