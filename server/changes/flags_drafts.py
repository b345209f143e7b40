"""Changes that need no question: setting flags, and saving a draft — each reported as the server kept it.

Flags never include `\\Deleted`: marking a message for deletion is `delete_messages`, which a
person approves; a `\\Deleted` flag set here would let the next plain EXPUNGE by any client
remove it unasked. A draft is appended to the Drafts mailbox with `\\Draft`; nothing is sent.

A server may take a flag and keep nothing, so what is reported is read back afterwards
(`imap.kept_flags`); a flag the mailbox says it does not keep (PERMANENTFLAGS) is refused before
anything is changed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from imapclient import IMAPClient

from imap_mcp.server.changes.messages import ChangeRefused, existing_uids, left_out, select_source
from imap_mcp.server.imap.kept_flags import append_and_read_back, read_flags
from imap_mcp.server.imap.lookup import MessageSelection
from imap_mcp.server.imap.mailboxes import mailbox_with_role, missing_role_advice
from imap_mcp.server.imap.uid_sets import compress
from imap_mcp.server.outgoing.compose import check_body, check_subject, parse_address, unique_recipients, wire_bytes

DRAFT_FLAGS = (b"\\Draft", b"\\Seen")


@dataclass(frozen=True)
class FlagReport:
    """What a flag change did, as read back: the flags now on every changed message (`added`) and on none of them
    (`removed`); `not_kept`: requested flags the server did not keep as asked on at least one message."""

    uidvalidity: int
    done: tuple[int, ...]
    missing: tuple[int, ...]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    not_kept: tuple[str, ...] = ()


def set_flags(client: IMAPClient, messages: MessageSelection, add: list[str], remove: list[str]) -> FlagReport:
    """Add then remove flags on the messages that still exist (the rest are reported missing), then read back."""
    selected = select_source(client, messages)
    refused = [flag for flag in add if not selected.keeps(flag.encode())]
    if refused:
        raise ChangeRefused(
            f"The mailbox {messages.mailbox!r} does not keep {', '.join(refused)} (the server's PERMANENTFLAGS do "
            "not include it): the server would accept it and keep nothing. Nothing was changed."
        )
    found = existing_uids(client, messages.uids)
    present = tuple(sorted(found))
    missing = left_out(messages.uids, found)
    if not present:
        return FlagReport(selected.uidvalidity, present, missing)
    uid_set = compress(present)
    if add:
        client.add_flags(uid_set, add, silent=True)
    if remove:
        client.remove_flags(uid_set, remove, silent=True)
    now = read_flags(client, present)
    lowered = [{flag.lower() for flag in now.get(uid, frozenset())} for uid in present]
    added = tuple(f for f in add if all(f.encode().lower() in flags for flags in lowered))
    removed = tuple(f for f in remove if not any(f.encode().lower() in flags for flags in lowered))
    not_kept = tuple(f for f in (*add, *remove) if f not in added and f not in removed)
    return FlagReport(selected.uidvalidity, present, missing, added, removed, not_kept)


@dataclass(frozen=True)
class SavedDraft:
    """Where the draft went and the flags it has there, as read back (empty when its UID is not known)."""

    mailbox: str
    uidvalidity: int | None
    uid: int | None
    flags: frozenset[bytes] = frozenset()


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
    filed = append_and_read_back(client, mailbox, wire_bytes(message), DRAFT_FLAGS, message_id=message["Message-ID"])
    if filed.uid is None:
        return SavedDraft(mailbox, None, None)
    return SavedDraft(mailbox, filed.uidvalidity, filed.uid, filed.flags)
