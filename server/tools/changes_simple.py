"""`set_message_flags` and `save_draft`: changes a person need not approve (nothing is lost or sent)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AfterValidator, BaseModel, Field

from imap_mcp.server.changes.by_query import resolve_query
from imap_mcp.server.changes.flags_drafts import append_draft, draft_message, set_flags
from imap_mcp.server.changes.questions import shown_uids
from imap_mcp.server.imap.message_ids import MessageRef, encode_id
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.tools.changes_common import (
    LISTED_IDS_MAX,
    changing,
    chosen_by_query,
    listed,
    log_change,
    one_mailbox_off_loop,
)
from imap_mcp.server.tools.deprecated import DeprecatedMailbox, DeprecatedUids
from imap_mcp.server.tools.errors import on_mailbox, refusals
from imap_mcp.server.tools.queries import Query

SYSTEM_FLAGS = {"\\seen": "\\Seen", "\\flagged": "\\Flagged", "\\answered": "\\Answered"}
#: the keywords imap-mcp sets for itself (`$ImapMcpListed`: list_new_messages' last look); no tool sets or clears one
OWN_KEYWORD_PREFIX = "$imapmcp"
#: an IMAP keyword: an atom without specials (RFC 3501), at most 64 characters
_KEYWORD = re.compile(r"[A-Za-z0-9$_.+\-&']{1,64}")


def checked_flag(raw: str) -> str:
    """`\\Seen`, `\\Flagged`, `\\Answered` (any case) or a keyword; `\\Deleted` and the rest refused."""
    if raw.lower() == "\\deleted":
        raise ValueError("\\Deleted cannot be set or cleared here: to delete messages use delete_messages.")
    if raw.startswith("\\"):
        if raw.lower() not in SYSTEM_FLAGS:
            raise ValueError(f"{raw!r} is not allowed: use \\Seen, \\Flagged, \\Answered or a keyword.")
        return SYSTEM_FLAGS[raw.lower()]
    if not _KEYWORD.fullmatch(raw):
        raise ValueError(f"{raw!r} is not a valid keyword: use letters, digits and $_.-+&' (at most 64).")
    if raw.lower().startswith(OWN_KEYWORD_PREFIX):
        raise ValueError(f"{raw!r} is one of imap-mcp's own keywords ($ImapMcp…), which no tool sets or clears.")
    return raw


Flags = Annotated[list[Annotated[str, AfterValidator(checked_flag)]], Field(max_length=20)]


class FlagsChanged(BaseModel):
    ids: list[str] = Field(description=f"The ids whose flags were changed (at most {LISTED_IDS_MAX}: see count).")
    missing_ids: list[str] = Field(
        description=f"Ids whose messages no longer exist; nothing happened to them (at most {LISTED_IDS_MAX}: see "
        "missing_count and rest)."
    )
    added: list[str] = Field(description="Flags asked to be added that every changed message now has (read back).")
    removed: list[str] = Field(description="Flags asked to be removed that no changed message has now (read back).")
    not_kept: list[str] = Field(
        default_factory=list,
        description="Flags the server did not keep as asked on at least one message: an added flag it dropped, or a "
        "removed one still there. Never reported as added or removed.",
    )
    count: int = Field(default=0, description="How many messages' flags were changed (exact).")
    missing_count: int = Field(default=0, description="How many messages no longer existed (exact).")
    rest: str | None = Field(
        default=None,
        description=f"Set when a list was cut at {LISTED_IDS_MAX} ids (the counts stay exact): the UIDs of the ids "
        "not listed, as ranges.",
    )


def _flags_rest(mailbox: str, done: tuple[int, ...], missing: tuple[int, ...]) -> str | None:
    """The UIDs of the ids a flag result does not list, as ranges; None when both lists are whole."""
    parts = [
        f"{what} UIDs in {mailbox!r}: {shown_uids(uids)}"
        for what, uids in (("changed", done), ("missing", missing))
        if len(uids) > LISTED_IDS_MAX
    ]
    return "; ".join(parts) + "." if parts else None


class DraftSaved(BaseModel):
    mailbox: str = Field(description="The Drafts mailbox the draft was saved in.")
    id: str | None = Field(description="The draft's message id (null if the server did not report its UID).")
    flags: list[str] = Field(
        default_factory=list,
        description="The flags the saved draft has, as read back (\\Draft marks it a draft in mail clients; empty when "
        "the draft could not be found again).",
    )


def register(mcp: MCPServer, pool: ImapPool) -> None:
    @mcp.tool(
        name="set_message_flags",
        title="Set message flags",
        description=(
            "Add or remove flags on messages (by ids, or by query: search_messages's filters): \\Seen (read), "
            "\\Flagged, \\Answered, or keywords. \\Deleted is refused: use delete_messages."
        ),
        annotations=changing("Set message flags", destructive=False, idempotent=True),
    )
    async def set_message_flags(
        ids: Annotated[
            list[str] | None, Field(min_length=1, max_length=50_000, description="Message ids, of one mailbox.")
        ] = None,
        query: Query = None,
        add: Annotated[Flags, Field(description="Flags to add.")] = [],  # noqa: B006 (pydantic copies defaults)
        remove: Annotated[Flags, Field(description="Flags to remove.")] = [],  # noqa: B006
        mailbox: DeprecatedMailbox = None,
        uids: DeprecatedUids = None,
    ) -> FlagsChanged:
        if not add and not remove:
            raise ToolError("Give at least one flag in add or remove.")
        if (chosen := chosen_by_query(query, ids, mailbox, uids)) is not None:
            search = chosen.search()
            messages = await on_mailbox(pool, lambda c: resolve_query(c, chosen.mailbox, search))
        else:
            messages = await one_mailbox_off_loop(ids, mailbox, uids)
        report = await on_mailbox(pool, lambda c: set_flags(c, messages, add, remove))
        if report.done:
            log_change(f"set_flags +{add} -{remove}", messages.mailbox, report.done)

        def as_ids(uids: Sequence[int]) -> list[str]:
            return [encode_id(MessageRef(messages.mailbox, report.uidvalidity, uid)) for uid in uids]

        return FlagsChanged(
            ids=as_ids(listed(report.done)),
            missing_ids=as_ids(listed(report.missing)),
            added=list(report.added),
            removed=list(report.removed),
            not_kept=list(report.not_kept),
            count=len(report.done),
            missing_count=len(report.missing),
            rest=_flags_rest(messages.mailbox, report.done, report.missing),
        )

    @mcp.tool(
        name="save_draft",
        title="Save a draft",
        description="Save a new draft message in the Drafts mailbox (flagged \\Draft). Nothing is sent.",
        annotations=changing("Save a draft", destructive=False, idempotent=False),
    )
    async def save_draft(
        to: Annotated[list[str], Field(max_length=100, description="Recipient addresses.")],
        subject: Annotated[str, Field(max_length=998, description="One line.")],
        body: Annotated[str, Field(max_length=1_000_000, description="Plain text.")],
        cc: Annotated[list[str], Field(max_length=100, description="Copy addresses.")] = [],  # noqa: B006
    ) -> DraftSaved:
        with refusals("Nothing was saved: "):
            message = draft_message(pool.settings.username, to, cc, subject, body)
        saved = await on_mailbox(pool, lambda c: append_draft(c, message), retry=False)
        uid_part = (saved.uid,) if saved.uid else ()
        log_change("save_draft", saved.mailbox, uid_part)
        draft_id = (
            encode_id(MessageRef(saved.mailbox, saved.uidvalidity, saved.uid))
            if saved.uid and saved.uidvalidity is not None
            else None
        )
        return DraftSaved(mailbox=saved.mailbox, id=draft_id, flags=sorted(f.decode() for f in saved.flags))
