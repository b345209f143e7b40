"""What an event says about a new message: bounded, whatever the message holds.

Mail is written by strangers, so the watcher never depends on a message being describable
(issue #25: one From of 40,000 addresses made the ENVELOPE a response line over imaplib's
limit, the FETCH failed, and the watcher reconnected and failed on it again, for good). It
fetches INTERNALDATE and only the start of the From and the Subject header fields, each
`HEADER_BYTES` at most and sent as a literal, which has no line limit, through `imap.fetch.fetch`,
which reports a response it cannot read as unreadable instead of failing the command. Of those bytes:

- `from`: the first `MAX_ADDRESSES` addresses, whole addresses only up to `MAX_FROM_CHARS`, each
  re-built as RFC 5322 with `email.headerregistry.Address`, so a display name with specials is
  quoted and escaped (`"Bob\\",<evil@x>" <b@example.com>` is one address, not two); display names
  decoded and cut to `MAX_NAME_CHARS`. Each is printed only if the email package reads the print
  back as exactly that address (else without its display name, else not at all). An address with
  no user or domain, a domain that is neither a host name nor an address literal, or longer than
  `MAX_ADDRESS_CHARS` is left out.
- `subject`: decoded as `get_message` shows it, cut to `MAX_SUBJECT_CHARS`.
- In both, control characters (C0, DEL, C1, U+2028, U+2029) and lone surrogates become spaces.

A message whose header fields could not be read at all (unreadable, or gone before the fetch)
has `from` and `subject` null; one log line says so, without sender or subject.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from email.errors import NonASCIILocalPartDefect
from email.headerregistry import Address
from email.parser import HeaderParser
from email.policy import compat32
from email.policy import default as default_policy
from itertools import islice
from typing import Any

from ..imap.fetch import UNREADABLE, FetchData, fetch
from ..imap.message_ids import MessageRef
from ..imap.session import Session
from ..logs import get_logger
from ..outgoing.compose import CONTROL_CHARACTERS, HEADER_PARSE_ERRORS
from ..reading.headers import header_text, parse_headers
from .outbox import rfc3339

#: bytes of the From and of the Subject header fields read per message (a longer From is cut)
HEADER_BYTES = 4096
MAX_ADDRESSES = 10
MAX_FROM_CHARS = 1000
MAX_NAME_CHARS = 64
#: RFC 5321's longest path (256 octets with its angle brackets)
MAX_ADDRESS_CHARS = 254
MAX_SUBJECT_CHARS = 200
EVENT_ITEMS = (
    "INTERNALDATE",
    f"BODY.PEEK[HEADER.FIELDS (FROM)]<0.{HEADER_BYTES}>",
    f"BODY.PEEK[HEADER.FIELDS (SUBJECT)]<0.{HEADER_BYTES}>",
)

_CONTROLS = re.compile(f"[{CONTROL_CHARACTERS}\ud800-\udfff]")
#: a host name (any script, RFC 6531) or an address literal: a valid domain literal such as `[x>,<evil@y]`
#: would read as more addresses to a receiver that splits the list on commas
_DOMAIN = re.compile(r"[^\s<>()\[\]\\,;:@\"]+|\[[A-Za-z0-9:.]+\]")
_ENCODED_WORD = re.compile(r"=\?[^?\s]*\?[^?\s]*\?[^?\s]*\?=")


def describe(client: Session, account: str, refs: Sequence[MessageRef]) -> list[dict[str, Any]]:
    """The event data of each message of `refs` (all in the selected mailbox), in their order; never the body."""
    fetched = fetch(client, [ref.uid for ref in refs], EVENT_ITEMS)
    described = []
    for ref in refs:
        data = fetched.get(ref.uid)
        event = message_data(account, ref, data or {})
        if event["from"] is None or event["subject"] is None:
            get_logger().info(
                "watch: %s %s uid %d: its event has no sender or subject: %s",
                account,
                ref.mailbox,
                ref.uid,
                _unread_because(data),
            )
        described.append(event)
    return described


def message_data(account: str, ref: MessageRef, data: FetchData) -> dict[str, Any]:
    """An event's data from the fetched `EVENT_ITEMS`; `from` and `subject` are null when they could not be read."""
    sender, subject = _section(data, b"FROM"), _section(data, b"SUBJECT")
    try:
        described = (
            None if sender is None else sender_text(sender),
            None if subject is None else subject_text(subject),
        )
    except Exception:  # hostile mail may break a decoder in a way nobody listed: the event says what is known
        described = (None, None)
    return {
        "account": account,
        "mailbox": ref.mailbox,
        "id": ref.id,
        "uid": ref.uid,
        "from": described[0],
        "subject": described[1],
        "date": _date(data.get(b"INTERNALDATE")),
    }


def _unread_because(data: FetchData | None) -> str:
    """Why a message's header fields are missing from its event (never what they hold)."""
    if data is None:
        return "it was gone before it could be read"
    if UNREADABLE in data:
        return str(data[UNREADABLE])
    if _section(data, b"FROM") is None or _section(data, b"SUBJECT") is None:
        return "the server sent no header fields for it"
    return "its header fields could not be parsed"


def _section(data: FetchData, field: bytes) -> bytes | None:
    """The fetched `BODY[HEADER.FIELDS (field)]` bytes; None when the server sent none."""
    for key, value in data.items():
        if key.startswith(b"BODY[HEADER.FIELDS") and field in key.partition(b"]")[0].upper():
            return value if isinstance(value, bytes) else b""
    return None


def sender_text(raw: bytes) -> str:
    """The From header field(s) in `raw` as a bounded RFC 5322 address list ("" when no address is usable).

    When `raw` fills `HEADER_BYTES` the header was cut: its last address may be cut too and is left out.
    """
    values = HeaderParser(policy=compat32).parsestr(header_text(raw)).get_all("From", [])
    parsed = [address for value in values for address in _parsed(str(value))]
    if len(raw) >= HEADER_BYTES:
        parsed = parsed[:-1]
    return _joined(rebuilt for rebuilt in map(_rebuilt, parsed) if rebuilt is not None)


def _parsed(value: str) -> tuple[Address, ...]:
    """The addresses of one From value as the email package reads them; () when it cannot.

    The package refuses a whole header whose display name decodes to a line break (an encoded
    `=0D=0A`): that one is read again without its encoded words, which keeps the addresses.
    """
    without_encoded_words = _ENCODED_WORD.sub("", value)
    for text in [value] if without_encoded_words == value else [value, without_encoded_words]:
        try:
            return tuple(default_policy.header_factory("From", _CONTROLS.sub(" ", text)).addresses)
        except Exception:  # hostile mail breaks the parser in ways nobody listed (RecursionError, ValueError, …)
            continue
    return ()


def _rebuilt(address: Address) -> Address | None:
    """`address` with its display name on one line and cut, or without it when only that prints as exactly
    itself (a name that reads as an encoded word once printed); None when the address is unusable."""
    if not (address.username and _DOMAIN.fullmatch(address.domain)):
        return None
    name = _cut(_one_line(address.display_name), MAX_NAME_CHARS)
    for rebuilt in (Address(name, address.username, address.domain), Address("", address.username, address.domain)):
        if len(rebuilt.addr_spec) <= MAX_ADDRESS_CHARS and _reads_back(rebuilt):
            return rebuilt
    return None


def _reads_back(address: Address) -> bool:
    """Whether an RFC 5322 parser reads `str(address)` as this one address and nothing else.

    The email package prints a local part such as `.` or `a..b` unquoted, which no parser reads back.
    A local part in UTF-8 (RFC 6532) is fine.
    """
    try:
        header = default_policy.header_factory("From", str(address))
    except HEADER_PARSE_ERRORS:
        return False
    return header.addresses == (address,) and all(isinstance(d, NonASCIILocalPartDefect) for d in header.defects)


def _joined(addresses: Iterable[Address]) -> str:
    """At most `MAX_ADDRESSES` of `addresses`, whole ones, while the list stays within `MAX_FROM_CHARS`."""
    text = ""
    for address in islice(addresses, MAX_ADDRESSES):
        longer = f"{text}, {address}" if text else str(address)
        if len(longer) > MAX_FROM_CHARS:
            break
        text = longer
    return text


def subject_text(raw: bytes) -> str:
    """The Subject in `raw`, decoded as `get_message` shows it, on one line and cut to `MAX_SUBJECT_CHARS`."""
    return _cut(_one_line(parse_headers(raw).subject), MAX_SUBJECT_CHARS)


def _one_line(text: str) -> str:
    return " ".join(_CONTROLS.sub(" ", text).split())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _date(received: Any) -> str | None:
    """INTERNALDATE (as `fetch` gives it, with its zone) in RFC 3339, UTC."""
    return rfc3339(received.timestamp()) if isinstance(received, dt.datetime) else None
