"""An overall deadline for one pool operation: `IMAP_TIMEOUT` counts for the whole operation.

A socket timeout bounds each read, so a server trickling one byte at a time could hold an
operation for ever. Under a `Deadline`, every socket the operation uses is watched (`watch`):
when the deadline passes, a timer thread shuts those sockets down, whatever reads or writes on
them fails at once, and the pool discards the connection. The deadline in effect is kept per
thread (a pool operation runs in one worker thread), so `connect` can watch a new socket before
the server's greeting is read.
"""

from __future__ import annotations

import contextlib
import socket
import threading

_current = threading.local()


class Deadline:
    """Shut down every watched socket once `seconds` have passed since entering; `expired` says whether it did."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._watched: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._outer: Deadline | None = None

    def __enter__(self) -> Deadline:
        self._outer = getattr(_current, "deadline", None)
        _current.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        _current.deadline = self._outer
        with self._lock:
            watched, self._watched = self._watched, []
        for sock in watched:
            sock.close()

    def watch(self, sock: socket.socket) -> None:
        """Shut `sock` down when the deadline passes (at once if it has). Holds a duplicate of its descriptor
        until the deadline ends, so the shutdown can never reach another socket that reused the number."""
        try:
            duplicate = socket.fromfd(sock.fileno(), sock.family, sock.type)
        except OSError:
            return  # already closed: nothing left to bound
        with self._lock:
            self._watched.append(duplicate)
            expired = self.expired
        if expired:
            _shut(duplicate)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            watched = list(self._watched)
        for sock in watched:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the peer may have closed it already
        sock.shutdown(socket.SHUT_RDWR)


def watch(sock: socket.socket) -> None:
    """Put `sock` under the current thread's deadline, if one is in effect."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.watch(sock)
