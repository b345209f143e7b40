"""Attachments as MCP resources: each named by an RFC 5092 IMAP URL, read with `resources/read`.

A part's URI is `imap://USER@HOST:PORT/MAILBOX;UIDVALIDITY=V/;UID=U/;SECTION=PART` (`part_uri`; `TEMPLATE` is
its RFC 6570 template): the user, host and port are the account's (`ImapSettings.account`, the user and the
mailbox percent-encoded), so a URI names one account's message, and a server serving another account finds nothing
at it. A URI has one spelling, the one written here (INBOX in upper case): any other is refused, as a message id's
other spellings are.

Reading one (`read_part_resource`) is `get_attachments` for one part: BODY.PEEK on an EXAMINEd mailbox (nothing
is marked read), the same bound (IMAP_MAX_ATTACHMENT_BYTES, here for one part), and an attachment that runs when
opened held back unless the operator allows it. Mail is not enumerable, so nothing is listed: the URIs come from
`get_message`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from ..config import ImapSettings
from ..errors import ArgumentError, MailboxError
from ..imap.lookup import MessageSelection
from ..imap.message_ids import MAX_UID, MessageRef, canonical_name
from ..imap.pool import Examined
from ..imap.session import Session
from .attachments import InlinePart, chosen_parts, inline_parts, message_attachments

#: the URI of every part this server serves (RFC 6570); `part_uri` writes exactly what it matches
TEMPLATE = "imap://{account}/{mailbox};UIDVALIDITY={uidvalidity}/;UID={uid}/;SECTION={section}"
SCHEME = "imap://"
_URI = re.compile(
    r"imap://(?P<server>[^/]+)/(?P<mailbox>[^;/]+);UIDVALIDITY=(?P<uidvalidity>[0-9]{1,10})"
    r"/;UID=(?P<uid>[0-9]{1,10})/;SECTION=(?P<section>[1-9][0-9]{0,8}(?:\.[1-9][0-9]{0,8}){0,31})"
)
#: the shape of a URI, for the model
SHAPE = "imap://USER@HOST:PORT/MAILBOX;UIDVALIDITY=N/;UID=N/;SECTION=N[.N…]"


class InvalidPartUri(ArgumentError):
    """Not the URI of a part as this server writes it."""


class PartElsewhere(MailboxError, LookupError):
    """The URI names a part of another account's mailbox."""


class PartWithheld(MailboxError, ValueError):
    """The part is not delivered (it runs when opened, or it is over the bound); the message says why."""


def authority(settings: ImapSettings) -> str:
    """`user@host:port` of the account as a URL writes it: the user percent-encoded, an IPv6 host in brackets."""
    host = settings.host.lower()
    return f"{quote(settings.username, safe='')}@{f'[{host}]' if ':' in host else host}:{settings.port}"


def part_uri(server: str, ref: MessageRef, part_id: str) -> str:
    """The URI of the part `part_id` of the message `ref`, on the account whose `authority` is `server` (INBOX
    spelled so in any case it was named)."""
    return (
        f"imap://{server}/{quote(canonical_name(ref.mailbox), safe='')};UIDVALIDITY={ref.uidvalidity}/;UID={ref.uid}/"
        f";SECTION={part_id}"
    )


@dataclass(frozen=True)
class PartAddress:
    """What a part's URI names: the account (its `authority`), the message and the part."""

    server: str
    ref: MessageRef
    section: str


def parse_part_uri(uri: str) -> PartAddress:
    """The part `uri` names; `InvalidPartUri` saying what is wrong when it is not a URI as `part_uri` writes it."""
    found = _URI.fullmatch(uri)
    if found is None:
        raise InvalidPartUri(
            f"{uri[:300]!r} is not the URI of an attachment: they read {SHAPE}, exactly as get_message lists them "
            "(attachments[].uri)."
        )
    numbers = int(found["uidvalidity"]), int(found["uid"])
    if not all(1 <= number <= MAX_UID for number in numbers):
        raise InvalidPartUri(f"{uri[:300]!r} names no message: UIDVALIDITY and UID are numbers from 1 to {MAX_UID}.")
    address = PartAddress(found["server"], MessageRef(unquote(found["mailbox"]), *numbers), found["section"])
    if part_uri(address.server, address.ref, address.section) != uri:
        raise InvalidPartUri(
            f"{uri[:300]!r} is not an attachment's URI as this server writes it (another spelling of one: leading "
            "zeros, other percent-encoding, INBOX in another case); pass the URI exactly as get_message gave it."
        )
    return address


def address_on(uri: str, settings: ImapSettings) -> PartAddress:
    """The part `uri` names on the account of `settings`; `PartElsewhere` when it names another account's."""
    address = parse_part_uri(uri)
    if address.server != authority(settings):
        raise PartElsewhere(
            f"No attachment at {uri[:300]!r} here: it names a mailbox of another account than the one this connection "
            "reads. Read it through a connection to that account (its own token), or use the URIs get_message gives "
            "here."
        )
    return address


def selection(address: PartAddress) -> MessageSelection:
    return MessageSelection(address.ref.mailbox, address.ref.uidvalidity, (address.ref.uid,))


def read_part_resource(
    client: Session, examined: Examined, address: PartAddress, limit: int, allow_executables: bool
) -> InlinePart:
    """The part `address` names, fetched whole (its mailbox examined); `PartWithheld` when `get_attachments` would
    skip it (it runs when opened, or it is over `limit` decoded bytes), saying why."""
    uid, found = message_attachments(client, examined, selection(address))
    parts = chosen_parts(found, [address.section])
    kept, skipped = inline_parts(client, uid, parts, _no_report, limit, allow_executables)
    if skipped:
        held = skipped[0]
        raise PartWithheld(f"The attachment {address.section} ({held.size} bytes) is not returned: {held.reason}.")
    return kept[0]


def _no_report(done: int, total: int) -> None:
    """resources/read reports no progress."""
