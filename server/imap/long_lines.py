"""FETCH responses too long to read: one hostile message must not break a connection.

imaplib refuses a response line over `MAX_LINE` (1,000,000) bytes by raising in the middle of
the response, which leaves the rest of it unread and the connection out of step with the
server. Anyone who can send mail can make such a line: the ENVELOPE of a From header with tens
of thousands of addresses, the BODYSTRUCTURE of a message with 10,000 parts.

`bound_lines` changes how a connection reads lines. A FETCH response with a line over the limit
is read to its end and dropped, `CHUNK` bytes at a time, following IMAP's framing (a line that
ends in `{n}` announces n bytes of literal, after which the response goes on with another
line), so memory stays bounded and the connection stays in step. In its place imaplib is given
`* <n> FETCH (UID <uid> X-IMAP-MCP-OVERSIZED` (the UID when the server sent it first, as Dovecot
does); `fetch` reports that message as `OVERSIZED` instead of failing the whole command. Any
other response with an overlong line still raises imaplib's error, and the pool closes that
connection (a command is left unfinished on it).

The reader also keeps the beginning of the last line it read and the name of the last command sent
(`last_exchange`), so an answer imap-mcp cannot use can be named in the error it becomes.
"""

from __future__ import annotations

import imaplib
import re
from collections.abc import Callable
from typing import BinaryIO, cast

#: the longest response line read, imaplib's own limit (`imaplib._MAXLINE`), which this reader replaces
MAX_LINE = 1_000_000
#: bytes read (and dropped) at a time while skipping an overlong response
CHUNK = 64 * 1024
#: what a skipped FETCH response leaves in its place, after the message's number (and UID)
OVERSIZED = b"X-IMAP-MCP-OVERSIZED"

_FETCH_START = re.compile(rb"\* (\d+) FETCH \((?:UID (\d+)[ )])?")
_LITERAL_AT_END = re.compile(rb"\{(\d{1,19})\}\r\n\Z")
_TAIL = 32  #: enough of a line's end to see a literal announcement
_KEPT = 300  #: how much of the last line read (and of a command line) is kept for `last_exchange`


def _discard(file: BinaryIO, size: int) -> None:
    while size > 0:
        piece = file.read(min(size, CHUNK))
        if not piece:
            raise imaplib.IMAP4.abort("socket error: EOF in the middle of an overlong response")
        size -= len(piece)


def _drop_rest_of_response(file: BinaryIO, first: bytes) -> None:
    """Read and drop the rest of a response whose first `first` bytes were read: lines and literals."""
    tail, ended = first[-_TAIL:], first.endswith(b"\r\n")
    while True:
        while not ended:
            piece = file.readline(CHUNK)
            if not piece:
                raise imaplib.IMAP4.abort("socket error: EOF in the middle of an overlong response")
            tail, ended = (tail + piece)[-_TAIL:], piece.endswith(b"\r\n")
        literal = _LITERAL_AT_END.search(tail)
        if literal is None:
            return
        _discard(file, int(literal.group(1)))
        tail, ended = b"", False


class _BoundedLines:
    """A connection's `readline`: imaplib's, except that an overlong FETCH response is skipped."""

    def __init__(self, imap: imaplib.IMAP4) -> None:
        self.imap = imap
        self.in_literal_response = False  #: the last line announced a literal: the next one continues it
        self.head = b""  #: how the response being read began: "* <n> FETCH (UID <uid>" when it is a FETCH
        self.last = b""  #: the beginning of the last line read
        self.command = b""  #: the name of the last command sent (`UID FETCH`, `STATUS`)

    @property
    def file(self) -> BinaryIO:
        return cast(BinaryIO, self.imap.file)

    def __call__(self) -> bytes:
        line = self.file.readline(MAX_LINE + 1)
        self.last = line[:_KEPT]
        if not self.in_literal_response:
            self.head = line[:64]
        if len(line) > MAX_LINE:
            line = self._skipped(line)
        self.in_literal_response = _LITERAL_AT_END.search(line[-_TAIL:]) is not None
        return line

    def _skipped(self, line: bytes) -> bytes:
        fetch = _FETCH_START.match(self.head)
        if fetch is None:
            raise self.imap.error(f"got more than {MAX_LINE} bytes in one response line")
        _drop_rest_of_response(self.file, line)
        number, uid = fetch.group(1), fetch.group(2)
        marker = b" " + OVERSIZED + b"\r\n"
        if self.in_literal_response:  # imaplib has the response's beginning: this line only ends it
            return marker
        return b"* " + number + b" FETCH (" + (b"UID " + uid if uid else b"") + marker

    def sending(self, send: Callable[[bytes], None]) -> Callable[[bytes], None]:
        """`send`, noting the name of each command it starts (a line that begins with a tag)."""

        def noting(data: bytes) -> None:
            words = bytes(data[:_KEPT]).split(None, 3)
            if len(words) > 1 and words[0].startswith(cast(bytes, self.imap.tagpre)):
                self.command = b" ".join(words[1:3] if words[1].upper() == b"UID" else words[1:2])
            send(data)

        return noting


def bound_lines(imap: imaplib.IMAP4) -> None:
    """Make `imap` skip FETCH responses with a line over `MAX_LINE` instead of failing mid-response."""
    reader = _BoundedLines(imap)
    imap.readline = reader  # type: ignore[method-assign]
    imap.send = reader.sending(imap.send)  # type: ignore[method-assign,assignment]


def last_exchange(imap: imaplib.IMAP4) -> tuple[bytes, bytes]:
    """The name of the last command sent on `imap` and the beginning of the last line read (empty if unknown)."""
    reader = imap.readline
    if isinstance(reader, _BoundedLines):
        return reader.command, reader.last
    return b"", b""
