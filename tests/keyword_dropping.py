"""A keyword-dropping IMAP server for tests: a real server behind a proxy that makes it keep no keyword.

Some servers take a keyword in STORE or APPEND, answer OK and keep nothing (keywords switched
off, PERMANENTFLAGS without `\\*`). No packaged server does exactly that, so this proxy makes
Dovecot do it, on the wire:

- from the client: the keywords (flags without a backslash) are taken out of the flag list of
  every STORE and APPEND command, so the server never sees them and answers OK;
- from the server: `PERMANENTFLAGS` and `FLAGS` lists lose `\\*` and every keyword — unless it is told to
  `claim_keywords`, and then it says it keeps them and still keeps none (what a read-back must catch).

It reads both directions line by line and passes IMAP literals (`{n}` then n bytes) through
untouched, so a message body that looks like a command is never rewritten.

    with KeywordDroppingServer(dovecot.port) as server:
        ... point imap-mcp at 127.0.0.1:server.port with IMAP_TLS=none ...
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Callable

_LITERAL = re.compile(rb"\{(\d+)\+?\}\r\n$")
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


class _Lines:
    """One direction of a connection: whole lines rewritten by `rewrite`, literals passed through as they are."""

    def __init__(self, source: socket.socket, sink: socket.socket, rewrite: Callable[[bytes], bytes]) -> None:
        self.source, self.sink, self.rewrite = source, sink, rewrite
        self.buffer = b""
        self.literal = 0  #: bytes of a literal still to pass through untouched

    def pump(self) -> None:
        with contextlib.suppress(OSError):
            while data := self.source.recv(65536):
                self.buffer += data
                self._flush()
        with contextlib.suppress(OSError):
            self.sink.shutdown(socket.SHUT_WR)

    def _flush(self) -> None:
        while self.buffer:
            if self.literal:
                chunk, self.buffer = self.buffer[: self.literal], self.buffer[self.literal :]
                self.literal -= len(chunk)
                self.sink.sendall(chunk)
                continue
            end = self.buffer.find(b"\r\n")
            if end < 0:
                return
            line, self.buffer = self.buffer[: end + 2], self.buffer[end + 2 :]
            found = _LITERAL.search(line)
            self.literal = int(found.group(1)) if found else 0
            self.sink.sendall(self.rewrite(line))


class KeywordDroppingServer:
    """A proxy on 127.0.0.1:`port` in front of the plain-text IMAP server at `upstream_port` (see the module)."""

    def __init__(self, upstream_port: int, claim_keywords: bool = False) -> None:
        self.upstream_port = upstream_port
        self.claim_keywords = claim_keywords
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []

    def __enter__(self) -> KeywordDroppingServer:
        threading.Thread(target=self._accept, name="keyword-dropping", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            server = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=30)
            client.settimeout(None)
            server.settimeout(None)
            self._sockets += [client, server]
            answers = _unchanged if self.claim_keywords else drop_from_answer
            for lines in (_Lines(client, server, drop_from_command), _Lines(server, client, answers)):
                threading.Thread(target=lines.pump, name="keyword-dropping-conn", daemon=True).start()
