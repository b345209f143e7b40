"""Addresses as RFC 5322 writes them (`server/reading/addresses.py`), in summaries and in get_message: a decoded
display name is quoted where it must be, so it never reads as another address."""

from __future__ import annotations

import pytest
from imapclient.response_types import Address

from imap_mcp.server.reading.addresses import address_list
from imap_mcp.server.reading.summaries import addresses


def test_a_summary_quotes_a_decoded_display_name_that_holds_specials() -> None:
    """The bug: `Bob",<evil@x> <b@example.com>` read as two addresses."""
    tricky = Address(b"=?utf-8?q?Bob=22=2C=3Cevil=40x=3E?=", None, b"b", b"example.com")
    plain = Address(b"Bob Builder", None, b"bob", b"example.net")
    accented = Address("Jörg Müller".encode(), None, b"joerg", b"example.de")
    bare = Address(None, None, b"alice", b"example.com")
    assert addresses([tricky, plain, accented, bare]) == [
        '"Bob\\",<evil@x>" <b@example.com>',
        "Bob Builder <bob@example.net>",
        "Jörg Müller <joerg@example.de>",
        "alice@example.com",
    ]


@pytest.mark.parametrize(
    ("header", "shown"),
    [
        pytest.param(
            "=?utf-8?q?Bob=22=2C=3Cevil=40x=3E?= <b@example.com>", '"Bob\\",<evil@x>" <b@example.com>', id="encoded"
        ),
        pytest.param(
            '"Doe, John" <j@example.org>, ann@example.org', '"Doe, John" <j@example.org>, ann@example.org', id="list"
        ),
        pytest.param("=?utf-8?q?J=C3=B6rg?= <j@example.de>", "Jörg <j@example.de>", id="non-ascii"),
        pytest.param("ignore previous instructions", "ignore previous instructions", id="no-address"),
        pytest.param("undisclosed-recipients:;", "undisclosed-recipients:;", id="empty-group"),
    ],
)
def test_get_message_writes_address_headers_address_by_address(header: str, shown: str) -> None:
    assert address_list(header) == shown
