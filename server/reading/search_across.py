"""Searching several mailboxes as one: one exact total, one order, one offset to page with.

The mailboxes are `["*"]` (every selectable mailbox of the personal namespace: shared and public ones are
searched only when named) or names and roles: an entry spelt as a role in lower
case (`"sent"`, `"archive"`, `"drafts"`, `"trash"`, `"junk"`, `"inbox"`, `"all"`, `"flagged"`) is the mailbox
`mailboxes.mailbox_with_role` finds for it, anything else a mailbox name.

Each mailbox is searched as `search_messages` searches one (`search.newest_matches`: the same order cache,
summary cache and attachment filter), and the first `offset + limit` of its matches in the asked order are
summarised; the page is those merged. The order across mailboxes is the one each mailbox has: INTERNALDATE
(when the server received the message, the date each summary shows), then, for equal dates, the mailbox's place
in the list, then the UID. The total is the sum of the mailboxes' exact totals. Paging is by `offset`, as in
one mailbox: stateless, and the same search with a larger offset is the next page (a change to a mailbox
between two pages shifts it as it would shift one mailbox's pages). As every page summarises up to
`offset + limit` messages of each mailbox, `offset + limit` is bounded (`MAX_DEPTH`) across mailboxes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

from ..errors import ArgumentError
from ..imap.mailboxes import Namespaces, Role, list_mailboxes, mailbox_with_role, missing_role_advice, namespaces
from ..imap.pool import Examined, ImapPool, InMailbox
from ..imap.session import Session
from .search import SearchPage, SearchQuery, search_page
from .search_cache import OrderCache
from .search_query import AttachmentMemory
from .summaries import MessageSummary, SummaryCache

#: the most mailboxes one search reads
MAX_MAILBOXES = 100
#: the deepest page (offset + limit) a search across mailboxes shows
MAX_DEPTH = 1_000
#: the roles an entry of `mailboxes` can name
ROLES: frozenset[str] = frozenset(get_args(Role)) - {"none"}
EVERY_MAILBOX = "*"


def resolved_mailboxes(client: Session, asked: Sequence[str]) -> list[str]:
    """The mailbox names `asked` means, each once, in the order given (see the module)."""
    if EVERY_MAILBOX in asked:
        if len(asked) > 1:
            raise ArgumentError('mailboxes: "*" means every mailbox; give it alone, or name the mailboxes instead.')
        space = namespaces(client)
        names = [found.name for found in list_mailboxes(client) if found.selectable and _own(space, found.name)]
    else:
        names = []
        for entry in asked:
            name = _named(client, entry)
            if name not in names:
                names.append(name)
    if len(names) > MAX_MAILBOXES:
        raise ArgumentError(
            f"mailboxes: {len(names)} mailboxes are more than the {MAX_MAILBOXES} one search reads; name the "
            "mailboxes (or roles) to search instead."
        )
    return names


def _own(space: Namespaces, name: str) -> bool:
    """Whether `name` is in the personal namespace: the longest namespace prefix it starts with is the personal one
    (Dovecot's personal prefix is empty, so every name starts with it, a public one's too)."""
    if name.upper() == "INBOX":
        return True
    prefixes = [prefix.lower() for prefix in space.all_prefixes if name.lower().startswith(prefix.lower())]
    return bool(prefixes) and max(prefixes, key=len) == space.prefix.lower()


def _named(client: Session, entry: str) -> str:
    if entry not in ROLES:
        return entry
    name = mailbox_with_role(client, entry)  # type: ignore[arg-type]  # checked against Role's values above
    if name is None:
        raise ArgumentError(
            f"mailboxes: no mailbox here has the role {entry!r}. "
            + missing_role_advice(client, entry)  # type: ignore[arg-type]
            + " Or name the mailbox itself (list_mailboxes shows them)."
        )
    return name


@dataclass(frozen=True)
class Caches:
    """What every search of one account remembers (see `search`, `search_query`)."""

    orders: OrderCache = dataclasses.field(default_factory=OrderCache)
    summaries: SummaryCache = dataclasses.field(default_factory=SummaryCache)
    attachments: AttachmentMemory = dataclasses.field(default_factory=AttachmentMemory)

    def page(self, client: Session, examined: Examined, query: SearchQuery) -> SearchPage:
        """One page of `query` in the examined mailbox."""
        return search_page(client, examined, query, self.orders, self.summaries, self.attachments)


def _received(summary: MessageSummary) -> float:
    return dt.datetime.fromisoformat(summary.date).timestamp() if summary.date else 0.0


async def across(pool: ImapPool, asked: Sequence[str], query: SearchQuery, caches: Caches) -> SearchPage:
    """One page of `query` over the mailboxes `asked` names (see the module)."""
    depth = query.offset + query.limit
    if depth > MAX_DEPTH:
        raise ArgumentError(
            f"offset + limit is {depth}, deeper than the {MAX_DEPTH} a search across mailboxes pages to. Narrow "
            "the search (since/before, from, ...) or search one mailbox, which pages to any depth."
        )
    names = await pool.run(lambda client: resolved_mailboxes(client, asked))
    top = dataclasses.replace(query, offset=0, limit=depth)
    total, found = 0, []
    for place, name in enumerate(names):
        page = await pool.run(InMailbox(name, lambda client, examined: caches.page(client, examined, top)))
        total += page.total
        found += [(place, summary) for summary in page.messages]
    found.sort(key=lambda item: (-_received(item[1]), item[0], -item[1].uid), reverse=query.oldest_first)
    messages = [summary for _, summary in found[query.offset : depth]]
    return SearchPage(mailbox=EVERY_MAILBOX, mailboxes=names, total=total, offset=query.offset, messages=messages)
