"""Changes that need no question: setting flags, and saving a draft.

Flags never include `\\Deleted`: marking a message for deletion is `delete_messages`, which a
person approves; a `\\Deleted` flag set here would let the next plain EXPUNGE by any client
remove it unasked. A draft is appended to the Drafts mailbox with `\\Draft`; nothing is sent.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from imapclient import IMAPClient

from imap_mcp.server.changes.messages import ChangeRefused, existing_uids, left_out, open_source
from imap_mcp.server.imap.connection import append
from imap_mcp.server.imap.lookup import MessageSelection
from imap_mcp.server.imap.mailboxes import mailbox_with_role, missing_role_advice
from imap_mcp.server.imap.uid_sets import compress
from imap_mcp.server.outgoing.compose import check_body, check_subject, parse_address, unique_recipients, wire_bytes

_APPENDUID = re.compile(rb"\[APPENDUID (\d+) (\d+)\]")


@dataclass(frozen=True)
class FlagReport:
    uidvalidity: int
    done: tuple[int, ...]
    missing: tuple[int, ...]


def set_flags(client: IMAPClient, messages: MessageSelection, add: list[str], remove: list[str]) -> FlagReport:
    """Add then remove flags on the messages that still exist; the rest are reported missing."""
    uidvalidity = open_source(client, messages, readonly=False)
    found = existing_uids(client, messages.uids)
    present = tuple(sorted(found))
    if present:
        uid_set = compress(present)
        if add:
            client.add_flags(uid_set, add, silent=True)
        if remove:
            client.remove_flags(uid_set, remove, silent=True)
    return FlagReport(uidvalidity, present, left_out(messages.uids, found))


@dataclass(frozen=True)
class SavedDraft:
    mailbox: str
    uidvalidity: int | None
    uid: int | None


def drafts_mailbox(client: IMAPClient) -> str:
    """The mailbox with the Drafts role (`mailbox_with_role`); refused when there is none."""
    found = mailbox_with_role(client, "drafts")
    if found is None:
        raise ChangeRefused(
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


def append_draft(client: IMAPClient, message: EmailMessage) -> SavedDraft:
    mailbox = drafts_mailbox(client)
    response = append(client, mailbox, wire_bytes(message), (b"\\Draft", b"\\Seen"))
    found = _APPENDUID.search(response if isinstance(response, bytes) else b"")
    if found is None:
        return SavedDraft(mailbox, None, None)
    return SavedDraft(mailbox, int(found.group(1)), int(found.group(2)))
