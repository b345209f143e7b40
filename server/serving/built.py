"""Each account's app, built on demand, and the bound on how many one replica keeps built at once.

Building an account's app registers every tool: a tenth of a second or more, and most of a megabyte. A replica
serving an accounts file keeps at most `IMAP_MCP_MAX_BUILT_ACCOUNTS` of them built; past that, the least
recently used app nobody is using is evicted (its lifespan ended, its IMAP connections closed) and is built
anew on its account's next request. An app with a request running is never evicted: a request for another
account waits until one is idle.

Nothing depends on the cache: a rebuilt app answers the same, and an approval asked by an evicted app is sealed
with the replica's key ring (`serving`) and run once by the store's ledger, so its answer runs on the rebuilt
one. A 2025-11-25 session lives in its app, so an evicted account's session ends (its client gets 404 and starts
a new one, as the spec says); a session's open stream is a running request, so it is never cut.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping

import anyio
import anyio.abc
import anyio.to_thread
from starlette.applications import Starlette

from ..accounts.loading import Account
from ..imap.pool import ImapPool
from ..setting_values import ConfigError

MAX_BUILT_VARIABLE = "IMAP_MCP_MAX_BUILT_ACCOUNTS"
DEFAULT_MAX_BUILT = 256

#: an account's app, built for its account and pool
Build = Callable[[Account, ImapPool], Starlette]


def load_max_built(env: Mapping[str, str]) -> int:
    raw = env.get(MAX_BUILT_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_MAX_BUILT
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(
            f"{MAX_BUILT_VARIABLE}={raw!r} is not valid: use the number of accounts whose app one server keeps "
            "built at once, at least 1."
        )
    return int(raw)


class ServedAccount:
    """One account of the router: its app from a request until evicted (built anew after) or `stop`."""

    def __init__(self, account: Account, new_pool: Callable[[], ImapPool], build: Build) -> None:
        self.account = account
        self._new_pool = new_pool
        self.pool = new_pool()
        self._build = build
        self._app: Starlette | None = None
        self._ending: anyio.Event | None = None  #: set to end the running app's lifespan
        self._ended: anyio.Event | None = None  #: set once it ended
        self._building = anyio.Lock()
        self._stopped = False

    @property
    def built(self) -> bool:
        return self._app is not None

    async def app(self, group: anyio.abc.TaskGroup) -> Starlette | None:
        """The account's app, its lifespan running (in `group`); None once stopped."""
        async with self._building:
            if self._app is None and not self._stopped:
                app = await anyio.to_thread.run_sync(self._build, self.account, self.pool)
                if self._stopped:
                    return None
                self._app, self._ending, self._ended = app, anyio.Event(), anyio.Event()
                await group.start(self._run, app, self._ending, self._ended)
        return None if self._stopped else self._app

    @staticmethod
    async def _run(
        app: Starlette, ending: anyio.Event, ended: anyio.Event, *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        try:
            async with app.router.lifespan_context(app):
                task_status.started()
                await ending.wait()
        finally:
            ended.set()

    async def evict(self, group: anyio.abc.TaskGroup) -> None:
        """End the app's lifespan, then close the account's connections (in `group`); the next request builds both
        anew. Only for an app with no request running (`BuiltApps`)."""
        ended = self._ended
        self._end_app()
        pool, self.pool = self.pool, self._new_pool()
        group.start_soon(anyio.to_thread.run_sync, pool.close_all)
        if ended is not None:
            await ended.wait()

    def stop(self) -> None:
        self._stopped = True
        self._end_app()

    def _end_app(self) -> None:
        if self._ending is not None:
            self._ending.set()
        self._app = self._ending = self._ended = None

    def same_mailbox_and_policy(self, account: Account) -> bool:
        """Whether `account` differs from this one at most in its tokens and OAuth subjects."""
        return dataclasses.replace(account, auth_tokens=(), oauth_subjects=()) == dataclasses.replace(
            self.account, auth_tokens=(), oauth_subjects=()
        )


class BuiltApps:
    """At most `cap` accounts with an app built (or being built); the least recently used idle one goes first."""

    def __init__(self, cap: int = DEFAULT_MAX_BUILT) -> None:
        self.cap = cap
        #: the accounts holding a slot, least recently used first
        self._slots: OrderedDict[ServedAccount, None] = OrderedDict()
        self._running: Counter[ServedAccount] = Counter()
        self._one_idle = anyio.Event()

    @contextlib.asynccontextmanager
    async def app_of(self, served: ServedAccount, group: anyio.abc.TaskGroup) -> AsyncIterator[Starlette | None]:
        """`served`'s app (built when missing, after an idle one made room) for one request; None once stopped."""
        await self._take_slot(served, group)
        try:
            yield await served.app(group)
        finally:
            self._release(served)

    def forget(self, served: ServedAccount) -> None:
        """`served` is no longer served (its app stopped by the caller): its slot is free."""
        self._slots.pop(served, None)

    async def _take_slot(self, served: ServedAccount, group: anyio.abc.TaskGroup) -> None:
        while served not in self._slots and len(self._slots) >= self.cap:
            if not await self._evict_one(group):
                await self._one_idle.wait()
        self._running[served] += 1
        self._slots[served] = None
        self._slots.move_to_end(served)

    async def _evict_one(self, group: anyio.abc.TaskGroup) -> bool:
        """Evict the least recently used app with no request running (its lifespan ended on return); False when
        every one has a request."""
        idle = next((served for served in self._slots if not self._running[served]), None)
        if idle is None:
            return False
        del self._slots[idle]
        await idle.evict(group)
        return True

    def _release(self, served: ServedAccount) -> None:
        self._running[served] -= 1
        if self._running[served] > 0:
            return
        del self._running[served]
        if not served.built:  # its build failed, or it was stopped: it holds no app
            self._slots.pop(served, None)
        self._one_idle.set()
        self._one_idle = anyio.Event()
