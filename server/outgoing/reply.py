"""Replies: who they go to, their subject, and the threading headers (RFC 5322 §3.6.4).

The original message was written by someone outside, so its headers are read leniently
(an address that does not parse is skipped) but nothing of it reaches the new message
except addresses re-built through `email.headerregistry.Address`, message ids matching the
msg-id shape, and its subject and display names with control characters and line separators (every
character `str.splitlines()` splits on, `outgoing.CONTROL_CHARACTERS`) turned into spaces, since a
sender can hide them in an encoded word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from email.policy import default as default_policy

from ..errors import OutgoingError
from .compose import (
    CONTROL_CHARACTERS,
    HEADER_PARSE_ERRORS,
    Draft,
    Recipients,
    addr_key,
    check_body,
    checked_recipients,
    unique_recipients,
)

#: the header fields a reply needs from the original
HEADER_FIELDS = ("From", "Reply-To", "To", "Cc", "Subject", "Message-ID", "In-Reply-To", "References")
_MSG_ID = re.compile(r"<[!-;=?-~]+>")
_REPLY_PREFIX = re.compile(r"^\s*re\s*:", re.IGNORECASE)
_CONTROLS = re.compile(f"[{CONTROL_CHARACTERS}]+")


@dataclass(frozen=True)
class Original:
    """What a reply takes from the message it answers."""

    sender: tuple[Address, ...]
    reply_to: tuple[Address, ...]
    to: tuple[Address, ...]
    cc: tuple[Address, ...]
    subject: str
    message_id: str | None
    references: tuple[str, ...]


def _addresses(message: EmailMessage, name: str) -> tuple[Address, ...]:
    """Every well-formed address of a header; anything malformed is left out rather than guessed at."""
    try:
        values = message.get_all(name, [])
    except HEADER_PARSE_ERRORS:
        return ()
    found: list[Address] = []
    for value in values:
        for address in getattr(value, "addresses", ()):
            try:
                rebuilt = Address(display_name=_one_line(address.display_name), addr_spec=address.addr_spec)
            except HEADER_PARSE_ERRORS:
                continue
            if rebuilt.username and rebuilt.domain and rebuilt.addr_spec.isascii():
                found.append(rebuilt)
    return tuple(found)


def _one_line(text: str) -> str:
    return _CONTROLS.sub(" ", text).strip()


def _message_ids(value: object) -> list[str]:
    return _MSG_ID.findall(str(value or ""))


def parse_original(headers: bytes) -> Original:
    """The reply-relevant headers of a message, from its raw header block."""
    message = BytesHeaderParser(policy=default_policy).parsebytes(headers)
    assert isinstance(message, EmailMessage)  # guaranteed by policy=default
    own_ids = _message_ids(message.get("Message-ID"))
    references = _message_ids(message.get("References")) or _message_ids(message.get("In-Reply-To"))[:1]
    return Original(
        sender=_addresses(message, "From"),
        reply_to=_addresses(message, "Reply-To"),
        to=_addresses(message, "To"),
        cc=_addresses(message, "Cc"),
        subject=_one_line(str(message.get("Subject") or "")),
        message_id=own_ids[0] if own_ids else None,
        references=tuple(references),
    )


def reply_subject(subject: str) -> str:
    """`Re: subject`, with `Re:` added only if the subject does not start with it already."""
    return subject if _REPLY_PREFIX.match(subject) else f"Re: {subject}".rstrip()


def thread_headers(original: Original) -> tuple[str | None, tuple[str, ...]]:
    """In-Reply-To and References: the original's id, appended to its own References."""
    if original.message_id is None:
        return None, original.references
    references = tuple(r for r in original.references if r != original.message_id)
    return original.message_id, (*references, original.message_id)


def _without(addresses: Iterable[Address], own: frozenset[str]) -> list[Address]:
    return [a for a in addresses if addr_key(a) not in own]


def reply_recipients(original: Original, own: frozenset[str], reply_all: bool) -> Recipients:
    """To: Reply-To, else From; for reply-all, Cc: the original's To and Cc. Never the account's own addresses.

    Replying to a message the account sent itself goes to that message's recipients instead.
    """
    to = _without(original.reply_to or original.sender, own)
    cc = _without(original.to + original.cc, own) if reply_all else []
    if not to:
        to, cc = _without(original.to, own), _without(original.cc, own) if reply_all else []
    recipients = unique_recipients(to, cc)
    if not recipients.everyone:
        raise OutgoingError(
            "The message has no one to reply to: its Reply-To, From, To and Cc hold only this account's own "
            "addresses or none that parse. Use send_message with explicit recipients instead."
        )
    return checked_recipients(recipients)


def reply_draft(original: Original, sender: Address, own: frozenset[str], body: str, reply_all: bool) -> Draft:
    """The reply to `original`, from `sender`, with `body` as written by the caller (nothing quoted)."""
    in_reply_to, references = thread_headers(original)
    return Draft(
        sender=sender,
        recipients=reply_recipients(original, own, reply_all),
        subject=reply_subject(original.subject),
        body=check_body(body),
        in_reply_to=in_reply_to,
        references=references,
    )
