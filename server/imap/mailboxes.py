"""Listing mailboxes and their roles (RFC 6154 SPECIAL-USE)."""

from __future__ import annotations

from typing import Literal

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError
from pydantic import BaseModel, Field

Role = Literal["inbox", "sent", "drafts", "trash", "junk", "archive", "all", "flagged", "none"]

SPECIAL_USE_ROLES: dict[bytes, Role] = {
    b"\\sent": "sent",
    b"\\drafts": "drafts",
    b"\\trash": "trash",
    b"\\junk": "junk",
    b"\\archive": "archive",
    b"\\all": "all",
    b"\\flagged": "flagged",
}
NOT_SELECTABLE = {b"\\noselect", b"\\nonexistent"}


class MailboxInfo(BaseModel):
    name: str = Field(description="Full mailbox name, decoded to readable text; pass it to other tools as is.")
    delimiter: str | None = Field(description="Hierarchy delimiter, e.g. '/' or '.'; null for a flat name.")
    role: Role = Field(description="What the mailbox is for, from SPECIAL-USE; 'none' for an ordinary one.")
    selectable: bool = Field(description="Whether the mailbox can hold messages (false for a pure folder).")
    messages: int | None = Field(default=None, description="Number of messages (only when counts are asked).")
    unread: int | None = Field(default=None, description="Number of unread messages (only with counts).")


def role_of(name: str, flags: tuple[bytes, ...]) -> Role:
    if name.upper() == "INBOX":
        return "inbox"
    for flag in flags:
        role = SPECIAL_USE_ROLES.get(flag.lower())
        if role:
            return role
    return "none"


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


def list_mailboxes(client: IMAPClient) -> list[MailboxInfo]:
    """Every mailbox the account can see, INBOX first, the rest in name order.

    imapclient decodes modified UTF-7 names, so `Entw&APw-rfe` comes back as `Entwürfe`.
    """
    found: list[MailboxInfo] = []
    for flags, delimiter, name in client.list_folders():
        name = name if isinstance(name, str) else name.decode("utf-8", "replace")
        lowered = {f.lower() for f in flags}
        found.append(
            MailboxInfo(
                name=name,
                delimiter=_text(delimiter),
                role=role_of(name, flags),
                selectable=not (lowered & NOT_SELECTABLE),
            )
        )
    found.sort(key=lambda m: (m.role != "inbox", m.name))
    return found


def with_counts(client: IMAPClient, mailboxes: list[MailboxInfo]) -> list[MailboxInfo]:
    """The same list with message and unread counts (STATUS MESSAGES UNSEEN) for every selectable mailbox.

    A mailbox the server will not give a STATUS for (e.g. no read right) keeps null counts.
    """
    counted: list[MailboxInfo] = []
    for mailbox in mailboxes:
        if mailbox.selectable:
            try:
                status = client.folder_status(mailbox.name, [b"MESSAGES", b"UNSEEN"])
            except IMAPClientError:
                status = {}
            mailbox = mailbox.model_copy(update={"messages": status.get(b"MESSAGES"), "unread": status.get(b"UNSEEN")})
        counted.append(mailbox)
    return counted
