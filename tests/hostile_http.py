"""Hostile HTTP peers on loopback, for the tests of what imap-mcp sends out (token endpoints, webhook delivery).

    with HostilePeer() as peer:
        peer.trickle()                       # the status line, then a header one byte a second, for ever
        peer.redirect(302, target)           # a redirect (not to be followed)
        peer.answer(400, body)               # any status and body
        peer.endless(500)                    # a body that never ends
        peer.requests                        # every request it got

`Listener` accepts connections and records each without a word: a redirect target that must never
be reached (any connection counts, a TLS handshake included).
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]
    body: bytes


class HostilePeer:
    """Answers every POST as the last `trickle`, `redirect`, `answer` or `endless` said (by default: 200, `{}`)."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.stopped = threading.Event()
        self._behaviour: tuple[str, Any] = ("answer", (200, b"{}"))
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> HostilePeer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self._http.shutdown()
        self._http.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}{path}"

    def trickle(self) -> None:
        """Every answer: the status line, then one byte of a header every second until the client leaves."""
        self._behaviour = ("trickle", None)

    def redirect(self, status: int, location: str) -> None:
        self._behaviour = ("answer", (status, b"", {"Location": location}))

    def answer(self, status: int, body: bytes) -> None:
        self._behaviour = ("answer", (status, body))

    def endless(self, status: int) -> None:
        """Every answer: `status`, then a body 4 KB every 10 ms for ever (enough to fill any memory in time)."""
        self._behaviour = ("endless", status)

    def record(self, request: Request) -> tuple[str, Any]:
        with self._lock:
            self.requests.append(request)
            return self._behaviour


def _handler_for(peer: HostilePeer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            kind, how = peer.record(Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            try:
                if kind == "trickle":
                    self._trickle()
                elif kind == "endless":
                    self._endless(how)
                else:
                    self._answer(*how)
            except OSError:
                return  # the client left: what it did is what the test looks at

        def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _trickle(self) -> None:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not peer.stopped.wait(1.0):
                self.wfile.write(b"a")

        def _endless(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(1 << 40))
            self.end_headers()
            chunk = b"x" * 4096
            while not peer.stopped.wait(0.01):
                self.wfile.write(chunk)

    return Handler


class Listener:
    """A TCP listener on loopback that counts the connections it gets and closes each at once."""

    def __init__(self) -> None:
        self.connections = 0
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.setblocking(False)
        while self._take_one():  # the connections still in the backlog count too
            pass
        self._socket.close()

    def url(self, scheme: str, path: str = "/elsewhere") -> str:
        return f"{scheme}://127.0.0.1:{self._socket.getsockname()[1]}{path}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            self._take_one()

    def _take_one(self) -> bool:
        try:
            connection, _ = self._socket.accept()
        except (TimeoutError, BlockingIOError):
            return False
        self.connections += 1
        connection.close()
        return True
