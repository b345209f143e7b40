"""The accept loop of the test proxies on loopback: each connection handed on until the proxy is stopped."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


def accept_until(stop: threading.Event, listener: socket.socket, on_client: Callable[[socket.socket], None]) -> None:
    """Hand each connection `listener` accepts to `on_client`, until `stop` is set (looked at every 0.1 s)."""
    listener.settimeout(0.1)
    while not stop.is_set():
        try:
            client, _ = listener.accept()
        except (TimeoutError, OSError):
            continue
        on_client(client)
