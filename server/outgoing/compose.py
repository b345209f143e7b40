"""Outgoing mail: checked addresses, the message a person approves, and the message that is sent.

Everything the caller supplies goes through the standard library's `email` package, never
through string concatenation: an address must parse as exactly one plain mailbox, and a
header value with a line break or another control character is refused (`HeaderInjection`)
rather than cleaned, so what a person approves is exactly what is sent.

The Message-ID of a sent message is derived from its approval (`message_id_for`, from the
approval's verified identity, never the text of its token): a replay of an approved call carries
the same approval, hence the same Message-ID, which is how the sending
tools find out, from the Sent mailbox alone, that it was already sent.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from email.errors import HeaderParseError
from email.headerregistry import Address, Group
from email.message import EmailMessage
from email.policy import default as default_policy
from email.utils import format_datetime

from imap_mcp.protocol.texts import shown, word

from ..errors import OutgoingError
from .formatting import Body, Layout
from .wire import FileToSend, attach, describe_files

#: at most this many recipients (to, cc and bcc together) in one message
MAX_RECIPIENTS = 100
MAX_SUBJECT_LENGTH = 998
#: C0 controls, DEL, C1 controls, and the line and paragraph separators: together every character
#: `str.splitlines()` splits on (\n \r \v \f \x1c-\x1e \x85 \u2028 \u2029), which the email package
#: refuses in a header only once the message is built
CONTROL_CHARACTERS = "\x00-\x1f\x7f-\x9f\u2028\u2029"
#: the same, except a tab, which is allowed in a subject (it is folding white space)
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_OR_TAB = re.compile(f"[{CONTROL_CHARACTERS}]")
#: what the email package raises on header text it cannot parse at all (rather than noting a defect)
HEADER_PARSE_ERRORS = (HeaderParseError, IndexError, ValueError)


class AddressError(OutgoingError):
    """A recipient or sender is not exactly one plain email address."""


class HeaderInjection(OutgoingError):
    """A header value carries a line break or another control character."""


def check_header_text(value: str, field: str) -> str:
    """`value` unchanged, or `HeaderInjection` if it could end the header or start another one."""
    if _CONTROL.search(value):
        raise HeaderInjection(
            f"The {field} contains a line break (a Unicode line or paragraph separator counts too) or another "
            f"control character, which could add headers of its own. Give the {field} as a single line of text."
        )
    return value


def parse_address(raw: str, field: str) -> Address:
    """One address, `alice@example.com` or `Alice <alice@example.com>`, or `AddressError` saying why not."""
    if _CONTROL_OR_TAB.search(raw):
        raise HeaderInjection(
            f"The {field} address {raw.strip()[:80]!r} contains a line break or another control character, "
            "which could add headers of its own. Give each address as 'alice@example.com' or "
            "'Alice <alice@example.com>'."
        )
    try:
        header = default_policy.header_factory(field, raw)
    except HEADER_PARSE_ERRORS:
        header = None
    addresses: tuple[Address, ...] = header.addresses if header is not None else ()
    groups: tuple[Group, ...] = header.groups if header is not None else ()
    if header is None or header.defects or len(addresses) != 1 or any(g.display_name for g in groups):
        raise AddressError(
            f"The {field} address {raw.strip()[:80]!r} is not one valid email address; give each address as "
            "'alice@example.com' or 'Alice <alice@example.com>', one per list item."
        )
    address: Address = addresses[0]
    if not address.username or not address.domain:
        raise AddressError(f"The {field} address {raw.strip()[:80]!r} has no domain; write it as 'name@example.com'.")
    if not address.addr_spec.isascii():
        raise AddressError(
            f"The {field} address {address.addr_spec!r} has non-ASCII characters in it; imap-mcp sends to ASCII "
            "addresses only (a display name may use any characters)."
        )
    return address


def addr_key(address: Address) -> str:
    """The address as compared and approved: the addr-spec, lower-cased."""
    return address.addr_spec.lower()


@dataclass(frozen=True)
class Recipients:
    """Who a message goes to; no address appears twice across the three lists."""

    to: tuple[Address, ...] = ()
    cc: tuple[Address, ...] = ()
    bcc: tuple[Address, ...] = ()

    @property
    def everyone(self) -> tuple[Address, ...]:
        return self.to + self.cc + self.bcc

    def bound(self) -> dict[str, list[str]]:
        """The recipient set an approval binds: each list's addr-specs, sorted."""
        return {name: sorted(addr_key(a) for a in group) for name, group in self.lists()}

    def lists(self) -> tuple[tuple[str, tuple[Address, ...]], ...]:
        return (("to", self.to), ("cc", self.cc), ("bcc", self.bcc))


def unique_recipients(to: Iterable[Address], cc: Iterable[Address] = (), bcc: Iterable[Address] = ()) -> Recipients:
    """`Recipients` with each address kept only in the first list it appears in (to, then cc, then bcc)."""
    seen: set[str] = set()

    def keep(group: Iterable[Address]) -> tuple[Address, ...]:
        kept: list[Address] = []
        for address in group:
            if addr_key(address) not in seen:
                seen.add(addr_key(address))
                kept.append(address)
        return tuple(kept)

    return Recipients(to=keep(to), cc=keep(cc), bcc=keep(bcc))


def checked_recipients(recipients: Recipients) -> Recipients:
    """`recipients`, or `OutgoingError` if there are none or more than `MAX_RECIPIENTS`."""
    count = len(recipients.everyone)
    if count == 0:
        raise OutgoingError("The message has no recipients; give at least one address in to, cc or bcc.")
    if count > MAX_RECIPIENTS:
        raise OutgoingError(
            f"The message has {count} recipients; imap-mcp sends to at most {MAX_RECIPIENTS} at once. Split it up."
        )
    return recipients


def parse_recipients(to: Sequence[str], cc: Sequence[str] = (), bcc: Sequence[str] = ()) -> Recipients:
    """The caller's to, cc and bcc lists, each item checked as one address."""
    return checked_recipients(
        unique_recipients(
            (parse_address(raw, "To") for raw in to),
            (parse_address(raw, "Cc") for raw in cc),
            (parse_address(raw, "Bcc") for raw in bcc),
        )
    )


def check_subject(subject: str) -> str:
    check_header_text(subject, "subject")
    if len(subject) > MAX_SUBJECT_LENGTH:
        raise OutgoingError(f"The subject is {len(subject)} characters long; keep it under {MAX_SUBJECT_LENGTH}.")
    return subject


def check_body(body: str) -> str:
    if "\x00" in body:
        raise OutgoingError("The body contains a NUL character, which mail cannot carry; remove it.")
    return body


@dataclass(frozen=True)
class Draft:
    """A message as it will be sent: what the approval binds, plus threading for a reply."""

    sender: Address
    recipients: Recipients
    subject: str
    body: str
    in_reply_to: str | None = None
    references: tuple[str, ...] = field(default=())
    attachments: tuple[FileToSend, ...] = field(default=())
    #: the HTML part of a formatted message (`formatting`); `body` is then its text alternative
    html: str | None = None
    layout: Layout | None = None

    @property
    def body_sha256(self) -> str:
        return hashlib.sha256(self.body.encode("utf-8")).hexdigest()

    def bound_html(self) -> dict[str, str]:
        """What an approval binds of the HTML part: its SHA-256 (nothing for a plain-text message, so one is bound as
        it always was)."""
        return {"html_sha256": hashlib.sha256(self.html.encode("utf-8")).hexdigest()} if self.html is not None else {}

    def with_body(self, body: Body) -> Draft:
        """This draft with `body` (its text, HTML and layout) instead."""
        return replace(self, body=check_body(body.text), html=body.html, layout=body.layout)


def message_id_for(approval: bytes, sender: Address) -> str:
    """The Message-ID of the message an approval allows: the same approval always gives the same one."""
    digest = hashlib.sha256(b"imap-mcp message-id\x00" + approval).digest()
    token = base64.b32encode(digest[:20]).decode().lower()
    return f"<{token}.imap-mcp@{sender.domain}>"


def build_message(draft: Draft, message_id: str, when: dt.datetime) -> EmailMessage:
    """The message itself. Bcc is kept as a header for the Sent copy; SMTP sending leaves it out.

    Raises `OutgoingError` if the email package refuses a header; `send_once.Outgoing.check` finds that out
    before a person is asked.
    """
    try:
        return _assemble(draft, message_id, when)
    except HEADER_PARSE_ERRORS as exc:
        raise unbuildable(exc) from None


def unbuildable(exc: Exception) -> OutgoingError:
    """What the email package's refusal to write a message says to the model."""
    return OutgoingError(
        f"The message cannot be written as mail ({exc}). Give the subject and the addresses as plain single-line "
        "text, and check them and the body for characters mail cannot carry."
    )


def _assemble(draft: Draft, message_id: str, when: dt.datetime) -> EmailMessage:
    message = EmailMessage()
    message["From"] = draft.sender
    for name, group in draft.recipients.lists():
        if group:
            message[name.capitalize()] = group
    message["Subject"] = draft.subject
    message["Date"] = format_datetime(when)
    message["Message-ID"] = message_id
    if draft.in_reply_to:
        message["In-Reply-To"] = draft.in_reply_to
    if draft.references:
        message["References"] = " ".join(draft.references)
    set_body(message, draft.body, draft.html)
    for file in draft.attachments:
        attach(message, file)
    return message


def set_body(message: EmailMessage, text: str, html: str | None) -> None:
    """`text` as the body, or, with `html`, multipart/alternative: `text` first, then `html` (RFC 2046 §5.1.4)."""
    message.set_content(text)
    if html is not None:
        message.add_alternative(html, subtype="html")


def wire_bytes(message: EmailMessage) -> bytes:
    """The message as IMAP APPEND takes it: CRLF line ends."""
    return message.as_bytes(policy=message.policy.clone(linesep="\r\n"))


def describe_for_approval(draft: Draft, reply_in: str | None = None) -> str:
    """The question a person answers: recipients and their number, subject, body length; every value as
    `protocol.texts` renders it, so none can add a line or reorder the text.

    The subject and body come from the caller (the model), so the text says so. For a reply
    (`reply_in` = the original's mailbox) the subject is the original's with `Re:`; it was written
    by whoever sent that message, so it is not shown, and neither is any of the original's body.
    """
    count = len(draft.recipients.everyone)
    what = f"a reply to a message in {shown(reply_in)}" if reply_in else "a new email"
    lines = [f"Send {what} from {word(draft.sender.addr_spec)} to {count} recipient{'s' if count != 1 else ''}?"]
    for name, group in draft.recipients.lists():
        if group:
            lines.append(f"{name.capitalize()}: {', '.join(word(a.addr_spec) for a in group)}")
    if reply_in:
        lines.append("Subject: 'Re:' and the original message's subject (not shown here).")
    else:
        lines.append(f"Subject, as written by the assistant: {shown(draft.subject)}")
    lines += (draft.layout or Layout(written_chars=len(draft.body))).describe()
    return "\n".join(lines + describe_files(draft.attachments))
