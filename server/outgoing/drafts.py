"""Saving a draft, which needs no question (nothing is sent): appended to the Drafts mailbox with `\\Draft`, and
the flags it has there read back (some servers ignore APPEND's flags)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from ..errors import MailboxError
from ..imap.kept_flags import append_and_read_back
from ..imap.mailboxes import mailbox_with_role, missing_role_advice
from ..imap.session import Session
from .compose import check_body, check_subject, parse_address, unique_recipients, wire_bytes

DRAFT_FLAGS = (b"\\Draft", b"\\Seen")


class NoDraftsMailbox(MailboxError, LookupError):
    """The account has no mailbox with the Drafts role."""


@dataclass(frozen=True)
class SavedDraft:
    """Where the draft went and the flags it has there, as read back (empty when its UID is not known)."""

    mailbox: str
    uidvalidity: int | None
    uid: int | None
    flags: frozenset[bytes] = frozenset()


def drafts_mailbox(client: Session) -> str:
    """The mailbox with the Drafts role (`mailbox_with_role`); refused when there is none."""
    found = mailbox_with_role(client, "drafts")
    if found is None:
        raise NoDraftsMailbox(
            f"This account has no Drafts mailbox; nothing was saved. {missing_role_advice(client, 'drafts')}"
        )
    return found


def draft_message(username: str, to: list[str], cc: list[str], subject: str, body: str) -> EmailMessage:
    """The draft as a message: checked addresses, one-line subject; From is the login when it is an address."""
    recipients = unique_recipients((parse_address(a, "To") for a in to), (parse_address(a, "Cc") for a in cc))
    message = EmailMessage()
    if "@" in username:
        message["From"] = parse_address(username, "From")
    for name, group in recipients.lists():
        if group:
            message[name.capitalize()] = group
    message["Subject"] = check_subject(subject)
    message["Date"] = format_datetime(dt.datetime.now(dt.UTC))
    message["Message-ID"] = make_msgid(domain="imap-mcp.invalid")
    message.set_content(check_body(body))
    return message


def append_draft(client: Session, message: EmailMessage) -> SavedDraft:
    mailbox = drafts_mailbox(client)
    filed = append_and_read_back(client, mailbox, wire_bytes(message), DRAFT_FLAGS, message_id=message["Message-ID"])
    if filed.uid is None:
        return SavedDraft(mailbox, None, None)
    return SavedDraft(mailbox, filed.uidvalidity, filed.uid, filed.flags)
