"""The pool's bounds: never more connections in use than `max_size`, never one connection for two
callers at once, and idle connections closed after `idle_seconds` by its reaper thread."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Callable

import anyio
import pytest
from harness import Account
from imapclient import IMAPClient

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.imap.connection import connect
from imap_mcp.server.imap.pool import Examined, ImapPool, InMailbox

pytestmark = pytest.mark.anyio


class Watched:
    """A connector that records every connection it opens and when each is logged out."""

    def __init__(self) -> None:
        self.clients: list[IMAPClient] = []
        self.logged_out: list[IMAPClient] = []
        self.closed = threading.Event()

    def __call__(self, settings: ImapSettings) -> IMAPClient:
        client = connect(settings)
        logout = client.logout

        def recorded_logout() -> object:
            self.logged_out.append(client)
            self.closed.set()
            return logout()

        client.logout = recorded_logout
        self.clients.append(client)
        return client


class Occupancy:
    """Which connections operations are using right now, the most at once, and any shared use."""

    def __init__(self, together: int) -> None:
        self._lock = threading.Lock()
        self._in_use: set[int] = set()
        self._all_in = threading.Barrier(together)  # only passes once `together` callers are in at once
        self.peak = 0
        self.shared = 0

    def use(self, client: IMAPClient) -> None:
        with self._lock:
            self.shared += id(client) in self._in_use
            self._in_use.add(id(client))
            self.peak = max(self.peak, len(self._in_use))
        try:
            client.noop()
            self._all_in.wait(timeout=30)
        finally:
            with self._lock:
                self._in_use.discard(id(client))


async def test_thirty_callers_share_three_connections_one_caller_each(account: Account) -> None:
    watched, occupancy = Watched(), Occupancy(together=3)
    pool = ImapPool(account.imap_settings(), max_size=3, connector=watched)

    def reading(client: IMAPClient, examined: Examined) -> None:
        occupancy.use(client)

    operations: list[Callable[[IMAPClient], None] | InMailbox[None]] = [
        occupancy.use if n % 2 else InMailbox("INBOX", reading) for n in range(30)
    ]
    try:
        async with anyio.create_task_group() as group:
            for operation in operations:
                group.start_soon(pool.run, operation)
    finally:
        pool.close_all()
    assert (occupancy.peak, occupancy.shared) == (3, 0)
    assert pool.opened == len(watched.clients) == 3


async def test_an_idle_connection_is_closed_by_the_reaper_and_the_next_call_opens_another(account: Account) -> None:
    watched = Watched()
    pool = ImapPool(account.imap_settings(), idle_seconds=0.3, connector=watched)
    reaper = f"imap-pool-reaper {account.imap_settings().account}"
    try:
        first = await pool.run(lambda client: client)
        assert watched.closed.wait(timeout=10), "the idle connection was never closed"
        assert watched.logged_out == [first]
        wait_until(lambda: not any(t.name == reaper for t in threading.enumerate()))  # nothing idle: it stops
        second = await pool.run(lambda client: client)
        assert second is not first and pool.opened == 2
    finally:
        pool.close_all()
    assert not any(t.name == reaper for t in threading.enumerate())
    assert watched.logged_out == [first, second]


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.02)


async def test_a_pool_nobody_holds_is_freed_despite_its_reaper(account: Account) -> None:
    """The reaper must not keep an abandoned pool, and with it its open connections, alive."""
    pool = ImapPool(account.imap_settings())
    await pool.run(lambda client: client.noop())
    freed = weakref.ref(pool)
    del pool
    gc.collect()
    assert freed() is None
