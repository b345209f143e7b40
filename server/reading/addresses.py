"""Addresses as RFC 5322 writes them, so a display name can never read as another address.

A display name is decoded (RFC 2047) before it is shown, and a decoded name may hold what an
encoded one hides: `=?utf-8?q?Bob=22=2C=3Cevil=40x=3E?= <b@example.com>` decodes to the name
`Bob",<evil@x>`. Written bare, `Bob",<evil@x> <b@example.com>` reads as two addresses. `formatted`
quotes every name that holds a special character (and escapes `"` and `\\` in it), as RFC 5322's
quoted-string does; non-ASCII names stay readable (RFC 6532), never re-encoded.
"""

from __future__ import annotations

import re
from email.utils import getaddresses
from typing import Any

from .parts import decode_words

#: RFC 5322 `specials`: a display name holding one is written as a quoted-string
_SPECIALS = re.compile(r'[][\\()<>@,:;".]')
_ESCAPED = re.compile(r'[\\"]')
#: the most addresses of one header that are parsed one by one (a longer list is shown as written)
MAX_ADDRESSES = 10_000


def formatted(name: str, address: str) -> str:
    """`Name <address>`, the name quoted when it must be; the bare address when there is no name."""
    name = " ".join(name.split())
    if not name:
        return address
    if _SPECIALS.search(name):
        name = '"' + _ESCAPED.sub(r"\\\g<0>", name) + '"'
    return f"{name} <{address}>"


def envelope_address(address: Any) -> tuple[str, str]:
    """(decoded display name, `mailbox@host`) of an IMAP ENVELOPE address (a host Courier gives as an encoded word,
    for a header with a raw UTF-8 domain, decoded too)."""
    name = decode_words(address.name) if address.name else ""
    mailbox = (address.mailbox or b"").decode("utf-8", "replace")
    host = decode_words(address.host) if address.host else ""
    return name, f"{mailbox}@{host}" if host else mailbox


def header_addresses(value: str) -> list[tuple[str, str]]:
    """(decoded display name, address) of each address in a raw header value; [] when none can be read."""
    if value.count(",") > MAX_ADDRESSES:
        return []
    parsed = [(name, address) for name, address in getaddresses([value]) if address or name]
    return [(decode_words(name), address) for name, address in parsed if address]


def address_list(value: str) -> str:
    """A raw address header as text: each address `formatted`, comma-separated; the value unfolded as written
    (encoded words left encoded, so nothing decoded can pass for syntax) when it cannot be read as addresses."""
    found = header_addresses(value)
    if not any("@" in address for _, address in found):
        return " ".join(value.split())
    return ", ".join(formatted(name, address) for name, address in found)


def domain_of(address: str) -> str | None:
    """The domain of `address`, lower case; None without one."""
    _, at, domain = address.rpartition("@")
    domain = domain.strip().strip(".").lower()
    return domain if at and domain else None
