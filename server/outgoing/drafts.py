"""Drafts: saving one (no question: nothing is sent), appended to the Drafts mailbox with `\\Draft` and the flags it
has there read back (some servers ignore APPEND's flags); reading one back to send it (`send_draft`), strictly.

A draft may have been written by anyone who can reach the mailbox (another mail client, a person, another
assistant), so a draft to send is read like incoming mail is: bounded in size, and only what parses strictly is
sent. Its recipients must each be one plain address, its subject one line, and its From this account's sending
address (or none): the person is asked about exactly those, bound to a digest of the whole draft.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import default as default_policy
from email.utils import format_datetime, make_msgid

from ..errors import MailboxError, OutgoingError
from ..imap.by_message_id import uids_with_message_id
from ..imap.fetch import fetch
from ..imap.kept_flags import append_and_read_back
from ..imap.mailboxes import mailbox_with_role, missing_role_advice
from ..imap.message_ids import MessageRef, check_uidvalidity
from ..imap.session import Session
from .compose import (
    HEADER_PARSE_ERRORS,
    Recipients,
    addr_key,
    check_body,
    check_header_text,
    check_subject,
    checked_recipients,
    parse_address,
    set_body,
    unique_recipients,
    wire_bytes,
)
from .wire import FileToSend, attach

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


def draft_message(
    sender: Address | None,
    recipients: Recipients,
    subject: str,
    body: str,
    in_reply_to: str | None = None,
    references: tuple[str, ...] = (),
    files: Sequence[FileToSend] = (),
    html: str | None = None,
) -> EmailMessage:
    """The draft as a message: checked addresses, one-line subject, threading headers for a reply, `body` (with `html`
    as its HTML alternative, if given), `files` attached (as placeholders: `wire.Wire` writes them); no From when
    the account's sending address is not known."""
    message = EmailMessage()
    if sender is not None:
        message["From"] = sender
    for name, group in recipients.lists():
        if group:
            message[name.capitalize()] = group
    message["Subject"] = check_subject(subject)
    message["Date"] = format_datetime(dt.datetime.now(dt.UTC))
    message["Message-ID"] = make_msgid(domain=sender.domain if sender is not None else "imap-mcp.invalid")
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
    if references:
        message["References"] = " ".join(references)
    set_body(message, check_body(body), html)
    for file in files:
        attach(message, file)
    return message


def new_recipients(to: list[str], cc: list[str]) -> Recipients:
    """A new draft's recipients as the caller gave them (a draft may have none yet)."""
    return unique_recipients((parse_address(a, "To") for a in to), (parse_address(a, "Cc") for a in cc))


def append_draft(client: Session, message: EmailMessage, whole: bytes | None = None) -> SavedDraft:
    """APPEND the draft (`whole`: its bytes as written, attachments included; default: `message` serialised)."""
    mailbox = drafts_mailbox(client)
    data = wire_bytes(message) if whole is None else whole
    filed = append_and_read_back(client, mailbox, data, DRAFT_FLAGS, message_id=message["Message-ID"])
    if filed.uid is None:
        return SavedDraft(mailbox, None, None)
    return SavedDraft(mailbox, filed.uidvalidity, filed.uid, filed.flags)


#: the largest draft `send_draft` takes (what SMTP servers commonly accept; larger ones are refused, never cut)
MAX_DRAFT_BYTES = 25 * 1024 * 1024
_MSG_ID = re.compile(r"<[!-;=?-~]+>")


class DraftRefused(OutgoingError):
    """A draft cannot be sent as it is; the message says what to change (in a mail client, or by a new draft)."""


class DraftGone(DraftRefused):
    """The draft is no longer in Drafts: sent (perhaps by an earlier answer to the same question), deleted, or
    edited (a mail client saves an edited draft as a new message)."""


@dataclass(frozen=True)
class DraftToSend:
    """A draft as `send_draft` will send it: what the person is asked about, and a digest of the whole draft."""

    ref: MessageRef
    message: EmailMessage
    recipients: Recipients
    #: where answers to it go (its Reply-To), shown in the question: it is not among the recipients
    reply_to: tuple[Address, ...]
    subject: str
    text_chars: int
    attachments: int
    in_reply_to: str | None
    digest: str


def read_draft(client: Session, ref: MessageRef, sender: Address) -> DraftToSend:
    """The draft `ref` names, read strictly (see the module docstring), without marking it read."""
    advice = "Save it as a draft first (save_draft), or send a new message."
    return parse_draft(ref, draft_bytes(client, ref, "send_draft sends", advice), sender)


def draft_bytes(client: Session, ref: MessageRef, tool_does: str, advice: str) -> bytes:
    """Every byte of the draft `ref` names, without marking it read; refused unless it is in the Drafts mailbox
    (`tool_does`: "<tool> <verb>", `advice`: what to do then), `DraftGone` when it is not there (any more)."""
    drafts = drafts_mailbox(client)
    if ref.mailbox != drafts:
        raise DraftRefused(
            f"{tool_does} drafts of the Drafts mailbox ({drafts!r}); this id names a message in {ref.mailbox!r}. "
            + advice
        )
    check_uidvalidity(ref, int(client.select_folder(ref.mailbox, readonly=True)[b"UIDVALIDITY"]))
    size = next(iter(fetch(client, [ref.uid], ["RFC822.SIZE"]).values()), {}).get(b"RFC822.SIZE")
    if size is None:
        raise DraftGone(
            f"The draft {ref.id} is no longer in {ref.mailbox!r}: it was sent, deleted, or edited (a mail client, "
            "and update_draft, save an edited draft as a new message). Search the Drafts mailbox again for its id."
        )
    if int(size) > MAX_DRAFT_BYTES:
        raise DraftRefused(
            f"The draft is {int(size)} bytes; {tool_does} drafts up to {MAX_DRAFT_BYTES} bytes. Make it smaller."
        )
    raw = next(iter(fetch(client, [ref.uid], ["BODY.PEEK[]"]).values()), {}).get(b"BODY[]", b"")
    return raw if isinstance(raw, bytes) else b""


def bytes_digest(raw: bytes) -> str:
    """What binds a draft's every byte: `sha256:` and the hex digest."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def parse_draft(ref: MessageRef, raw: bytes, sender: Address) -> DraftToSend:
    """The draft's parts the question names and the send uses; `DraftRefused` for anything that is not plain."""
    message = BytesParser(policy=default_policy).parsebytes(raw)
    assert isinstance(message, EmailMessage)  # guaranteed by policy=default
    senders = _plain_addresses(message, "From")
    if senders and [addr_key(a) for a in senders] != [addr_key(sender)]:
        raise DraftRefused(
            f"The draft is from {', '.join(a.addr_spec for a in senders)}, not this account's sending address "
            f"{sender.addr_spec}; imap-mcp sends only as {sender.addr_spec}. Change its From, or save a new draft."
        )
    recipients = checked_recipients(
        unique_recipients(*(_plain_addresses(message, name) for name in ("To", "Cc", "Bcc")))
    )
    subject = str(message.get("Subject") or "")
    try:
        check_header_text(subject, "draft's subject")
    except OutgoingError as exc:
        raise DraftRefused(str(exc)) from None
    body = message.get_body(preferencelist=("plain", "html"))
    text = body.get_content() if isinstance(body, EmailMessage) else ""
    in_reply_to = _MSG_ID.findall(str(message.get("In-Reply-To") or ""))
    return DraftToSend(
        ref=ref,
        message=message,
        recipients=recipients,
        reply_to=tuple(_plain_addresses(message, "Reply-To")),
        subject=subject,
        text_chars=len(text) if isinstance(text, str) else 0,
        attachments=sum(1 for _ in message.iter_attachments()),
        in_reply_to=in_reply_to[0] if in_reply_to else None,
        digest=bytes_digest(raw),
    )


def _plain_addresses(message: EmailMessage, name: str) -> list[Address]:
    """Every address of the header `name`, each one plain address (`parse_address`), or `DraftRefused` naming it."""
    try:
        values = message.get_all(name, [])
    except HEADER_PARSE_ERRORS:
        values = None
    if values is None or any(getattr(value, "defects", ()) for value in values):
        raise DraftRefused(f"The draft's {name} header cannot be read as addresses; fix it in a mail client.")
    found: list[Address] = []
    for value in values:
        for address in getattr(value, "addresses", ()):
            try:
                found.append(parse_address(str(address), name))
            except OutgoingError as exc:
                raise DraftRefused(f"In the draft: {exc}") from None
    return found


def outgoing_copy(draft: DraftToSend, sender: Address, message_id: str, when: dt.datetime) -> EmailMessage:
    """The draft as it is sent: its content as saved, from `sender`, dated now, with this approval's Message-ID."""
    message = copy.deepcopy(draft.message)
    for name, value in (("From", str(sender)), ("Date", format_datetime(when)), ("Message-ID", message_id)):
        del message[name]
        message[name] = value
    return message


def remove_draft(client: Session, ref: MessageRef) -> bool:
    """Take the sent draft out of Drafts: `\\Deleted` + `UID EXPUNGE` of exactly it; False when the server cannot
    expunge one message exactly (no UIDPLUS) and the draft stays."""
    if not client.has_capability("UIDPLUS"):
        return False
    client.select_folder(ref.mailbox)
    check_uidvalidity(ref, int(client.select_folder(ref.mailbox)[b"UIDVALIDITY"]))
    client.add_flags([ref.uid], [b"\\Deleted"], silent=True)
    client.uid_expunge([ref.uid])
    return True


def original_in_inbox(client: Session, message_id: str) -> MessageRef | None:
    """The message in INBOX whose Message-ID is `message_id` (the original a reply draft answers), if one is."""
    uidvalidity = int(client.select_folder("INBOX", readonly=True)[b"UIDVALIDITY"])
    found = uids_with_message_id(client, message_id)
    return MessageRef("INBOX", uidvalidity, found[0]) if found else None
