"""A keyword-dropping IMAP server for tests: a real server behind a proxy that makes it keep no keyword.

Some servers take a keyword in STORE or APPEND, answer OK and keep nothing (keywords switched
off, PERMANENTFLAGS without `\\*`). No packaged server does exactly that, so this proxy makes
Dovecot do it, on the wire:

- from the client: the keywords (flags without a backslash) are taken out of the flag list of
  every STORE and APPEND command, so the server never sees them and answers OK;
- from the server: `PERMANENTFLAGS` and `FLAGS` lists lose `\\*` and every keyword — unless it is told to
  `claim_keywords`, and then it says it keeps them and still keeps none (what a read-back must catch).

It reads both directions line by line and passes IMAP literals (`{n}` then n bytes) through
untouched (`line_proxy`), so a message body that looks like a command is never rewritten.

    with KeywordDroppingServer(dovecot.port) as server:
        ... point imap-mcp at 127.0.0.1:server.port with IMAP_TLS=none ...
"""

from __future__ import annotations

import re
import socket

from line_proxy import LineProxy, Lines, Pump

_APPEND = re.compile(rb"^\S+ APPEND ", re.IGNORECASE)
_STORE = re.compile(rb"^\S+ (?:UID )?STORE ", re.IGNORECASE)
#: APPEND's flag list is its first parenthesised list; STORE's follows FLAGS (after UNCHANGEDSINCE, if any)
_APPEND_FLAGS = re.compile(rb"()\(([^()]*)\)")
_STORE_FLAGS = re.compile(rb"(FLAGS(?:\.SILENT)? )\(([^()]*)\)", re.IGNORECASE)
_SERVER_LIST = re.compile(rb"(\[PERMANENTFLAGS \(|^\* FLAGS \()([^()]*)\)", re.IGNORECASE)


def _without_keywords(flags: bytes) -> bytes:
    return b" ".join(flag for flag in flags.split() if flag.startswith(b"\\") and flag != b"\\*")


def drop_from_command(line: bytes) -> bytes:
    """A STORE or APPEND command line without the keywords in its flag list; any other line as it is."""
    flag_list = _APPEND_FLAGS if _APPEND.match(line) else _STORE_FLAGS if _STORE.match(line) else None
    if flag_list is None:
        return line
    return flag_list.sub(lambda found: found.group(1) + b"(" + _without_keywords(found.group(2)) + b")", line, count=1)


def drop_from_answer(line: bytes) -> bytes:
    """A server line whose PERMANENTFLAGS or FLAGS list names neither `\\*` nor a keyword."""
    return _SERVER_LIST.sub(lambda found: found.group(1) + _without_keywords(found.group(2)) + b")", line)


def _unchanged(line: bytes) -> bytes:
    return line


class KeywordDroppingServer(LineProxy):
    """A proxy on 127.0.0.1:`port` in front of the plain-text IMAP server at `upstream_port` (see the module)."""

    name = "keyword-dropping"

    def __init__(self, upstream_port: int, claim_keywords: bool = False) -> None:
        super().__init__(upstream_port)
        self.claim_keywords = claim_keywords

    def __enter__(self) -> KeywordDroppingServer:
        super().__enter__()
        return self

    def pumps(self, number: int, client: socket.socket, server: socket.socket) -> list[Pump]:
        answers = _unchanged if self.claim_keywords else drop_from_answer
        return [Lines(client, server, drop_from_command).pump, Lines(server, client, answers).pump]
