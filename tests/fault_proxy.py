"""A fault-injecting TCP proxy for tests: imap-mcp talks to it, it talks to the real server.

    with FaultProxy(dovecot.port) as proxy:
        proxy.inject(Fault(b"Copy completed", "cut"))   # after the server's COPY reply: cut
        ... point imap-mcp at 127.0.0.1:proxy.port (plain TCP, so the proxy sees the bytes) ...

A fault fires at an exact byte: just after the first occurrence of `after` in one direction of
one connection (`to_server`: what the client sends; `to_client`: what the server answers), the
`skip`-th occurrence counting across all connections from 0. Everything up to and including
`after` is forwarded; then, for that connection:

- `cut`: both sides are closed at once, nothing more is forwarded;
- `stall`: nothing more is forwarded in that direction (the other still flows) until the
  connection ends;
- `trickle`: the rest of that direction goes one byte every `interval` seconds (with `until`:
  only up to and including the next `until`, then at full speed again);
- `reorder`: the line `after` is in is held and forwarded after the next line, so two lines
  arrive swapped (`after` should lie in one read, as a short line does);
- `hold`: nothing more is forwarded in that direction until the test calls `fault.release()`,
  then everything held goes on (so a test can act while a command waits half-sent);
- `replace`: that occurrence of `after` itself is forwarded as `replacement` instead, and everything
  else as it comes (a server answer rewritten: `HIGHESTMODSEQ 5)` as `HIGHESTMODSEQ NIL)`); `after`
  must arrive in one read, as a short piece of one line does.

Faults are armed once each (`inject` adds one; `fired` tells which went off). No timing is
asserted anywhere: a test waits on results, never on the clock.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from listening import accept_until

Direction = Literal["to_server", "to_client"]
Action = Literal["cut", "stall", "trickle", "reorder", "hold", "replace"]
CHUNK = 65536


@dataclass
class Fault:
    """One fault: `action` right after the (`skip`+1)-th `after` seen in `direction`."""

    after: bytes
    action: Action
    direction: Direction = "to_client"
    skip: int = 0
    interval: float = 0.05
    until: bytes | None = None
    replacement: bytes = b""
    fired: bool = field(default=False, init=False)
    _seen: int = field(default=0, init=False)
    _released: threading.Event = field(default_factory=threading.Event, init=False)

    def release(self) -> None:
        """`hold`: forward what was held, and everything after it (also if it has not fired yet)."""
        self._released.set()


@dataclass
class _Side:
    """One direction of one proxied connection: where it reads, where it writes, and its fault state."""

    source: socket.socket
    sink: socket.socket
    direction: Direction
    window: bytes = b""  #: the last bytes forwarded, so a pattern split across reads is still found
    mode: Action | None = None
    interval: float = 0.05
    until: bytes | None = None
    trickled: bytes = b""  #: trickle: the last bytes dripped, to see `until`
    held: bytes = b""  #: reorder: the held rest of a line
    pending: bytes = b""  #: reorder/trickle/stall/hold: bytes not forwarded yet
    released: threading.Event | None = None  #: hold: set when the held bytes may go on


class FaultProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.connections = 0  #: connections accepted so far

    def inject(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Disarm every fault not fired yet."""
        with self._lock:
            self._faults = []

    def __enter__(self) -> FaultProxy:
        thread = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(5)

    def _accept(self) -> None:
        accept_until(self._stop, self._listener, self._start_serving)

    def _start_serving(self, client: socket.socket) -> None:
        self.connections += 1
        thread = threading.Thread(target=self._serve, args=(client,), name="fault-proxy-conn", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            client.close()
            return
        sides = [_Side(client, server, "to_server"), _Side(server, client, "to_client")]
        try:
            self._pump(sides)
        finally:
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.close()

    def _pump(self, sides: list[_Side]) -> None:
        with selectors.DefaultSelector() as selector:
            for side in sides:
                side.source.setblocking(False)
                selector.register(side.source, selectors.EVENT_READ, side)
            next_drip = time.monotonic()
            while not self._stop.is_set():
                for key, _ in selector.select(timeout=0.02):
                    side = key.data
                    try:
                        data = side.source.recv(CHUNK)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        return
                    if self._forward(side, data) == "cut":
                        return
                for side in sides:
                    if side.mode == "hold" and side.released is not None and side.released.is_set():
                        _send(side.sink, side.pending)
                        side.mode, side.pending = None, b""
                if time.monotonic() >= next_drip:
                    next_drip = time.monotonic() + min(s.interval for s in sides)
                    for side in sides:
                        if side.mode == "trickle" and side.pending:
                            _drip(side)

    def _forward(self, side: _Side, data: bytes) -> Action | None:
        """Forward `data` of one side, firing an armed fault where its pattern ends."""
        if side.mode in ("stall", "trickle", "hold"):
            side.pending += data
            return None
        if side.mode == "reorder":
            self._reorder(side, data)
            return None
        fault, end = self._match(side, data)
        if fault is None:
            _send(side.sink, data)
            side.window = (side.window + data)[-4096:]
            return None
        if fault.action == "replace":
            start = max(0, end - len(fault.after))
            _send(side.sink, data[:start] + fault.replacement)
            side.window = (side.window + data[:start] + fault.replacement)[-4096:]
            return self._forward(side, data[end:]) if data[end:] else None
        if fault.action == "reorder":  # hold from the start of the line the pattern is in
            line_break = data.rfind(b"\r\n", 0, max(0, end - len(fault.after)))
            end = line_break + 2 if line_break >= 0 else 0
        _send(side.sink, data[:end])
        rest = data[end:]
        side.mode, side.interval, side.until = fault.action, fault.interval, fault.until
        side.released = fault._released
        if fault.action == "cut":
            return "cut"
        if fault.action == "reorder":
            self._reorder(side, rest)
            return None
        side.pending = rest
        return None

    def _reorder(self, side: _Side, data: bytes) -> None:
        """Hold the rest of the current line, forward the next whole line, then the held one."""
        side.pending += data
        if not side.held:
            line_end = side.pending.find(b"\r\n")
            if line_end < 0:
                return None
            side.held, side.pending = side.pending[: line_end + 2], side.pending[line_end + 2 :]
        line_end = side.pending.find(b"\r\n")
        if line_end < 0:
            return None
        _send(side.sink, side.pending[: line_end + 2] + side.held + side.pending[line_end + 2 :])
        side.held, side.pending, side.mode = b"", b"", None
        return None

    def _match(self, side: _Side, data: bytes) -> tuple[Fault | None, int]:
        """The armed fault whose pattern ends in `data` first (and where in `data` it ends)."""
        seen = side.window + data
        with self._lock:
            best: tuple[Fault | None, int] = (None, len(data) + 1)
            for fault in self._faults:
                if fault.fired or fault.direction != side.direction:
                    continue
                start = max(0, len(side.window) - len(fault.after) + 1)
                position = seen.find(fault.after, start)
                while position >= 0 and fault._seen < fault.skip:
                    fault._seen += 1
                    position = seen.find(fault.after, position + 1)
                if position >= 0:
                    end = position + len(fault.after) - len(side.window)
                    if end < best[1]:
                        best = (fault, end)
            if best[0] is not None:
                best[0].fired = True
        return best if best[0] is not None else (None, 0)


def _drip(side: _Side) -> None:
    """Forward one trickled byte; past `until`, forward the rest at once and stop trickling."""
    _send(side.sink, side.pending[:1])
    side.trickled = (side.trickled + side.pending[:1])[-64:]
    side.pending = side.pending[1:]
    if side.until is not None and side.trickled.endswith(side.until):
        _send(side.sink, side.pending)
        side.mode, side.pending = None, b""


def _send(sock: socket.socket, data: bytes) -> None:
    if not data:
        return
    with contextlib.suppress(OSError):
        sock.setblocking(True)
        sock.sendall(data)
        sock.setblocking(False)
