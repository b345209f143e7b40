"""A message's headers as a person reads them: decoded, one line each, addresses as RFC 5322 writes them, with the
`Authentication-Results` a trusted server wrote kept for the verdict (`RawHeaders`); bounded, and hostile bytes
read as text, never raised."""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message
from email.parser import HeaderParser
from email.policy import compat32

from pydantic import BaseModel, Field

from .addresses import address_list, header_addresses
from .authentication import (
    ResultsHeader,
)
from .fence import SenderLine
from .parts import (
    decode_words,
)
from .warnings import (
    SenderFacts,
)

ADDRESS_HEADERS = ("From", "To", "Cc", "Reply-To")


class Headers(BaseModel):
    """The headers as the sender wrote them, decoded; addresses as RFC 5322 writes them (names quoted where needed)."""

    sender: SenderLine = Field(alias="from")
    to: SenderLine
    cc: SenderLine
    reply_to: SenderLine
    date: SenderLine = Field(description="The Date header as written by the sender.")
    subject: SenderLine
    message_id: SenderLine
    in_reply_to: SenderLine
    references: list[SenderLine]

    model_config = {"populate_by_name": True}


def _header(message: Message, name: str) -> str:
    """The header unfolded with encoded words decoded; malformed input degrades to its raw text.

    An address header is read address by address (`addresses.address_list`), each display name decoded
    and quoted where it must be, so a decoded name cannot read as another address."""
    value = message.get(name, "")
    if name in ADDRESS_HEADERS:
        return address_list(value)
    return " ".join(decode_words(value).split())


def header_text(raw: bytes) -> str:
    """Header bytes as text: raw UTF-8 (RFC 6532, and what most mailers send unencoded), else Latin-1.

    The email package's byte parser would turn every non-ASCII byte into a surrogate and show "��".
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


@dataclass(frozen=True)
class RawHeaders:
    """The header fields of a message, read as text (not yet cleaned), and what they say about the sender."""

    values: dict[str, str]
    facts: SenderFacts

    def headers(self) -> Headers:
        values = self.values
        return Headers(
            sender=values["sender"],
            to=values["to"],
            cc=values["cc"],
            reply_to=values["reply_to"],
            date=values["date"],
            subject=values["subject"],
            message_id=values["message_id"],
            in_reply_to=values["in_reply_to"],
            references=values["references"].split(),
        )


def read_headers(raw: bytes, results: tuple[ResultsHeader, ...] = ()) -> RawHeaders:
    """The header fields in `raw` (HEADER.FIELDS of `HEADER_FIELDS`) and the sender's facts, with `results`."""
    message = HeaderParser(policy=compat32).parsestr(header_text(raw))
    names = {
        "sender": "From",
        "to": "To",
        "cc": "Cc",
        "reply_to": "Reply-To",
        "date": "Date",
        "subject": "Subject",
        "message_id": "Message-ID",
        "in_reply_to": "In-Reply-To",
        "references": "References",
        "list_unsubscribe": "List-Unsubscribe",
        "list_unsubscribe_post": "List-Unsubscribe-Post",
    }
    senders = header_addresses(message.get("From", ""))
    name, address = senders[0] if senders else ("", "")
    facts = SenderFacts(
        name=name,
        address=address,
        reply_to=tuple(a for _, a in header_addresses(message.get("Reply-To", ""))),
        results=results,
        others=tuple(senders[1:]),
    )
    return RawHeaders({key: _header(message, header) for key, header in names.items()}, facts)


def parse_headers(raw: bytes) -> Headers:
    return read_headers(raw).headers()
