"""A bounded pool of logged-in IMAP connections for one account.

It is a cache only: every operation is given a connection that is logged in and not in use
by anyone else, and no result depends on which connection it was. Idle connections are
closed after `idle_seconds`; one idle for more than `check_after` seconds gets a NOOP before
it is handed out. An operation that fails because a reused connection had been dropped is
run once more on a fresh one.
"""

from __future__ import annotations

import imaplib
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio.to_thread
from imapclient import IMAPClient

from .config import ImapSettings
from .imap_connection import MailboxUnavailable, close, connect

T = TypeVar("T")

#: what a dropped connection raises inside imapclient / imaplib
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    imaplib.IMAP4.abort,
    ConnectionError,
    socket.timeout,
    ssl.SSLError,
    EOFError,
    BrokenPipeError,
)


@dataclass
class _Idle:
    client: IMAPClient
    since: float


class ImapPool:
    def __init__(
        self,
        settings: ImapSettings,
        max_size: int = 4,
        idle_seconds: float = 120.0,
        check_after: float = 5.0,
        connector: Callable[[ImapSettings], IMAPClient] = connect,
    ) -> None:
        self.settings = settings
        self._connector = connector
        self._idle: list[_Idle] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_size)
        self._idle_seconds = idle_seconds
        self._check_after = check_after
        self.opened = 0  #: connections opened so far (for tests and benchmarks)

    def _take_idle(self) -> IMAPClient | None:
        now = time.monotonic()
        with self._lock:
            expired = [i for i in self._idle if now - i.since > self._idle_seconds]
            self._idle = [i for i in self._idle if now - i.since <= self._idle_seconds]
            chosen = self._idle.pop() if self._idle else None
        for item in expired:
            close(item.client)
        if chosen is None:
            return None
        if now - chosen.since > self._check_after:
            try:
                chosen.client.noop()
            except Exception:
                close(chosen.client)
                return None
        return chosen.client

    def _open(self) -> IMAPClient:
        client = self._connector(self.settings)
        with self._lock:
            self.opened += 1
        return client

    def _give_back(self, client: IMAPClient) -> None:
        with self._lock:
            self._idle.append(_Idle(client, time.monotonic()))

    def run_sync(self, operation: Callable[[IMAPClient], T], retry: bool = True) -> T:
        """Run `operation` on a connection of its own; retry once on a fresh one if a reused one dropped.

        Pass `retry=False` for an operation that must not run twice (an APPEND, a send).
        """
        with self._slots:
            client = self._take_idle()
            reused = client is not None
            if client is None:
                client = self._open()
            try:
                result = operation(client)
            except CONNECTION_ERRORS:
                close(client)
                if not (reused and retry):
                    raise MailboxUnavailable(
                        f"The connection to the IMAP server {self.settings.host} was lost during the "
                        "operation; try again."
                    ) from None
                client = self._open()
                try:
                    result = operation(client)
                except CONNECTION_ERRORS:
                    close(client)
                    raise MailboxUnavailable(
                        f"The connection to the IMAP server {self.settings.host} was lost twice; try again later."
                    ) from None
                except BaseException:
                    self._give_back(client)
                    raise
            except BaseException:
                self._give_back(client)
                raise
            self._give_back(client)
            return result

    async def run(self, operation: Callable[[IMAPClient], T], retry: bool = True) -> T:
        """`run_sync` in a worker thread, so the event loop never waits on the network."""
        return await anyio.to_thread.run_sync(self.run_sync, operation, retry)

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for item in idle:
            close(item.client)
