"""A line-aware IMAP proxy for tests: plain TCP on 127.0.0.1 in front of a real server's plain-text port.

Each connection gets two pumps, one per direction. `Lines` forwards one direction line by line,
passing IMAP literals (`{n}` or `{n+}` at the end of a line, then n bytes) through unread, and lets
a `rewrite` change each line or cut the connection there. The proxies built on it: the keyword-dropping
server (`keyword_dropping`) and the command log with its spoiled answers (`command_log`).
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Callable

from listening import accept_until

LITERAL = re.compile(rb"\{(\d+)\+?\}\r\n$")
#: what a rewrite returns for a line: the line to forward, or None to cut the connection there
Rewrite = Callable[[bytes], bytes | None]
Pump = Callable[[], None]


def acknowledge_at_once(sock: socket.socket) -> None:
    """Acknowledge what `sock` received now: a side that writes in pieces with Nagle's algorithm on (imapclient a
    command and its CRLF, Mailutils an answer a line at a time) waits for the ACK of each piece, which Linux
    delays up to 40 ms (`imap/promptly.py`). Linux clears the setting on its own, so it is set after each read."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


class Lines:
    """One direction of a connection: whole lines rewritten by `rewrite`, literals passed through as they are."""

    def __init__(self, source: socket.socket, sink: socket.socket, rewrite: Rewrite) -> None:
        self.source, self.sink, self.rewrite = source, sink, rewrite
        self.buffer = b""
        self.literal = 0  #: bytes of a literal still to pass through untouched

    def pump(self) -> None:
        with contextlib.suppress(OSError):
            while data := self.source.recv(65536):
                acknowledge_at_once(self.source)
                self.buffer += data
                if not self._flush():
                    break
        with contextlib.suppress(OSError):
            self.sink.shutdown(socket.SHUT_WR)
            self.source.shutdown(socket.SHUT_RDWR)

    def _flush(self) -> bool:
        """Forward every whole line (and literal) of the buffer; False once a rewrite cut the connection."""
        while self.buffer:
            if self.literal:
                chunk, self.buffer = self.buffer[: self.literal], self.buffer[self.literal :]
                self.literal -= len(chunk)
                self.sink.sendall(chunk)
                continue
            end = self.buffer.find(b"\r\n")
            if end < 0:
                return True
            line, self.buffer = self.buffer[: end + 2], self.buffer[end + 2 :]
            found = LITERAL.search(line)
            self.literal = int(found.group(1)) if found else 0
            rewritten = self.rewrite(line)
            if rewritten is None:
                return False
            self.sink.sendall(rewritten)
        return True


class LineProxy:
    """Listens on 127.0.0.1:`port`; each connection it accepts is joined to the server at `upstream_port` and
    served by the pumps `pumps(number, client, server)` gives (one thread each)."""

    name = "line-proxy"

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def pumps(self, number: int, client: socket.socket, server: socket.socket) -> list[Pump]:
        raise NotImplementedError

    def __enter__(self) -> LineProxy:
        threading.Thread(target=self._accept, name=self.name, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        accept_until(self._stop, self._listener, self._join)

    def _join(self, client: socket.socket) -> None:
        server = socket.create_connection(self.upstream, timeout=30)
        for sock in (client, server):
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            number = len(self._sockets) // 2
            self._sockets += [client, server]
        for pump in self.pumps(number, client, server):
            threading.Thread(target=pump, name=f"{self.name}-connection", daemon=True).start()
