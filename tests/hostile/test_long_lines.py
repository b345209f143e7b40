"""Skipping an overlong FETCH response byte for byte, as servers other than Dovecot may frame it.

Dovecot sends the UID first and its literals where the tests against it put them; these cases
need exact bytes no test server produces on demand (a UID after the overlong item, a literal
inside the overlong line, a response that continues after a literal with the overlong part, an
overlong line that is no FETCH), so they are fed to the line reader from memory.
"""

from __future__ import annotations

import imaplib
import io
from types import SimpleNamespace
from typing import Any

import pytest

from imap_mcp.server.imap.fetch import NOT_UNDERSTOOD, TOO_LONG, UNREADABLE, _by_uid
from imap_mcp.server.imap.long_lines import MAX_LINE, _BoundedLines

HUGE = b'"' + b"x" * (MAX_LINE + 10) + b'"'


def reader(stream: bytes) -> _BoundedLines:
    return _BoundedLines(SimpleNamespace(file=io.BytesIO(stream), error=imaplib.IMAP4.error))  # type: ignore[arg-type]


def lines(stream: bytes, count: int) -> list[bytes]:
    read = reader(stream)
    return [read() for _ in range(count)]


def test_an_overlong_fetch_line_becomes_a_marker_with_its_uid_and_the_next_response_is_intact() -> None:
    stream = b"* 3 FETCH (UID 17 ENVELOPE (" + HUGE + b"))\r\n* 4 FETCH (UID 18 FLAGS ())\r\nA1 OK done\r\n"
    assert lines(stream, 3) == [
        b"* 3 FETCH (UID 17 X-IMAP-MCP-OVERSIZED\r\n",
        b"* 4 FETCH (UID 18 FLAGS ())\r\n",
        b"A1 OK done\r\n",
    ]


def test_literals_inside_and_after_the_overlong_line_are_skipped_by_their_announced_size() -> None:
    literal = b"A1 OK a line inside a literal must not be read as the answer\r\n"
    stream = (
        b"* 5 FETCH (FLAGS () ENVELOPE (" + HUGE + b" {%d}\r\n" % len(literal) + literal + b" NIL))\r\nA1 OK done\r\n"
    )
    assert lines(stream, 2) == [b"* 5 FETCH ( X-IMAP-MCP-OVERSIZED\r\n", b"A1 OK done\r\n"]


def test_an_overlong_continuation_after_a_literal_ends_the_response_imaplib_already_began() -> None:
    stream = b"* 6 FETCH (UID 20 BODY[HEADER] {5}\r\nhello BODYSTRUCTURE (" + HUGE + b"))\r\nA1 OK done\r\n"
    read = reader(stream)
    assert read() == b"* 6 FETCH (UID 20 BODY[HEADER] {5}\r\n"
    assert read.imap.file.read(5) == b"hello"  # imaplib reads the literal itself
    assert read() == b" X-IMAP-MCP-OVERSIZED\r\n"
    assert read() == b"A1 OK done\r\n"


def test_an_overlong_line_of_another_response_still_fails() -> None:
    with pytest.raises(imaplib.IMAP4.error, match="got more than"):
        lines(b"* SORT " + b"1 " * MAX_LINE + b"\r\n", 1)


def fetch_data(*responses: Any) -> list[Any]:
    return list(responses)


def test_unreadable_responses_are_reported_by_uid_or_by_message_number() -> None:
    data = fetch_data(
        b"3 (UID 17 X-IMAP-MCP-OVERSIZED",
        (b"6 (UID 20 BODY[HEADER] {5}", b"hello"),
        b" X-IMAP-MCP-OVERSIZED",
        b"7 ( X-IMAP-MCP-OVERSIZED",
        b'8 (UID 22 FLAGS (\\Seen) RFC822.SIZE NIL INTERNALDATE "broken',
        b"9 (UID 23 FLAGS (\\Seen))",
    )
    by_number: dict[int, str] = {}
    found = dict(_by_uid(data, by_number))
    assert found == {
        17: {UNREADABLE: TOO_LONG},
        20: {UNREADABLE: TOO_LONG},
        22: {UNREADABLE: NOT_UNDERSTOOD},
        23: {b"FLAGS": (b"\\Seen",)},
    }
    assert by_number == {7: TOO_LONG}
