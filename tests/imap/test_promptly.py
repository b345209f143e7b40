"""Every connection sends each write at once and has each answer acknowledged as it is read (`imap.promptly`).

Without TCP_QUICKACK after each command, a server that writes its answer a line at a time waits up to
40 ms for the acknowledgement of each line but the last (GNU Mailutils: 44 ms a command, `bench/promptly.py`).
How long an answer takes is the benchmark's to measure; these tests look at the socket: which options are
set, and when.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
from harness import Account
from imapclient import IMAPClient

from imap_mcp.server.config import TlsMode
from imap_mcp.server.imap.connection import close, connect
from imap_mcp.server.imap.promptly import exchange_promptly


class RecordingSocket(socket.socket):
    """A real TCP socket that notes each TCP option set on it, in order."""

    options: list[tuple[int, int]]

    def setsockopt(self, level: int, option: int, value: Any, *more: Any) -> None:
        if level == socket.IPPROTO_TCP:
            self.options.append((option, value))
        super().setsockopt(level, option, value, *more)


@pytest.fixture
def loopback_pair() -> Iterator[tuple[RecordingSocket, socket.socket]]:
    """Two ends of one loopback TCP connection: ours, recording its options, and the peer's."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        ours = socket.create_connection(listener.getsockname())
        peer, _ = listener.accept()
    recording = RecordingSocket(fileno=ours.detach())
    recording.options = []
    with recording, peer:
        yield recording, peer


def test_each_command_sent_is_followed_by_a_quick_acknowledgement_and_sent_unchanged(
    loopback_pair: tuple[RecordingSocket, socket.socket],
) -> None:
    ours, peer = loopback_pair
    imap = SimpleNamespace(sock=ours, send=ours.sendall)
    exchange_promptly(cast(IMAPClient, SimpleNamespace(_imap=imap)))
    assert ours.options == [(socket.TCP_NODELAY, 1)]

    lines = (b"a1 NOOP\r\n", b"a2 APPEND INBOX {3}\r\n", b"abc\r\n")
    for line in lines:
        imap.send(line)
        assert ours.options[-1] == (socket.TCP_QUICKACK, 1)
    assert ours.options.count((socket.TCP_QUICKACK, 1)) == 3
    peer.settimeout(5)
    received = b""
    while len(received) < len(b"".join(lines)):
        received += peer.recv(64)
    assert received == b"".join(lines)


@pytest.mark.parametrize("tls", ["implicit", "starttls"])
def test_a_pool_connection_is_prompt_after_tls_and_login(account: Account, tls: TlsMode) -> None:
    """On the socket a command was last sent on (after STARTTLS: the TLS one): no Nagle, and quick
    acknowledgement still on once the answer is read (the kernel would otherwise be delaying them)."""
    client = connect(account.imap_settings(tls))
    try:
        client.noop()
        sock = client.socket()
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 1
    finally:
        close(client)
