"""One watcher process among any number: the accounts of one store, shared out by leases, watched and delivered.

Every `lease_seconds / 3` (its *renewal*) a watcher, in one transaction, says it is alive, renews
every lease it holds and reads what the others hold (`leases`); then it works out its share
(`balancing`), gives up what is over it, takes free accounts up to it, and starts or stops
watching (`watcher.InboxWatcher`, a thread per account) and delivering (`delivery.Deliveries`)
accordingly. A watcher that joins makes the others' shares smaller: they give accounts up at
their next renewal, and it takes them at its next. One that stops gives up its leases at once;
one that dies stops renewing, and its accounts are taken once its leases run out: each watcher
renews again right after the first other member's row runs out, so that takes the lease time
and a moment, not a renewal interval more.

Nothing is lost or sent twice across these moves: events are added only together with the
mark they move on (`watcher`), and an account changes hands only between attempts. A watcher
gives up a lease only after the account's attempt in flight ended, and no attempt outlives
the lease under which it started (`Deliveries`).

A watcher of named accounts (`watch --account NAME`) is no member: it takes its account whenever
it is free and keeps it (the members leave such accounts out of their shares).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from ..config import Settings
from ..logs import get_logger
from ..store.clock import CLOCK_TOLERANCE, ClockRefused, apart, store_time
from ..store.database import Store, Tx
from .balancing import plan, shares, someone_short
from .cipher import StoreCipher
from .delivery import POST_TIMEOUT, Deliveries
from .leases import (
    LEASE_SECONDS,
    FleetView,
    fleet_view,
    forget_member,
    leave,
    release_leases,
    renew,
    take_leases,
)
from .rows import adopt_legacy_rows
from .watcher import MAILBOX, InboxWatcher

T = TypeVar("T")

#: threads (and store connections) of one watcher process for its watchers' store work
STORE_THREADS = 4
#: a renewal after another member's row ran out waits this much longer, so that the row is surely out
AFTER_EXPIRY = 0.05
#: whose clock the store's time is, by `Tx.postgres`
_WHOSE = {True: "PostgreSQL now()", False: "this host's, for SQLite"}


@dataclass
class _Watching:
    watcher: InboxWatcher
    settings: Settings
    heard_written: float | None = None


class Fleet:
    """The accounts of one store this process may watch (`update`), shared with every other watcher of the store."""

    def __init__(
        self,
        store: Store,
        holder: str,
        *,
        member: bool = True,
        max_accounts: int | None = None,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.holder = holder
        self.member = member
        self.max_accounts = max_accounts
        self.lease_seconds = lease_seconds
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self._known: dict[str, Settings] = {}
        self._watching: dict[str, _Watching] = {}
        self._releasing: set[str] = set()
        self._unclaimed: frozenset[str] = frozenset()
        self._lease_until: dict[str, float] = {}
        self._said: tuple[int, int, int, int] | None = None
        #: why this watcher's clock is refused (said once), or None while it agrees with the store's
        self._clock_refused: str | None = None
        self._store_threads = ThreadPoolExecutor(STORE_THREADS, thread_name_prefix="watch-store")
        self.deliveries = Deliveries(store, holder, self.lease_left)

    def lease_left(self, account: str) -> float:
        """Seconds left of this watcher's lease of `account` (0 when it holds none), on the monotonic clock (counted
        from before the renewal read the store's time: never more than is left, whatever this host's clock says)."""
        return self._lease_until.get(account, 0.0) - time.monotonic()

    def transact(self, work: Callable[[Tx], T]) -> T:
        """`work` in one store transaction, on one of the few threads that keep this process's store connections."""
        return self._store_threads.submit(self._in_transaction, work).result()

    def _in_transaction(self, work: Callable[[Tx], T]) -> T:
        with self.store.transaction() as tx:
            return work(tx)

    def update(self, accounts: Mapping[str, Settings]) -> None:
        """The accounts (by store key, `ImapSettings.account`) this watcher may watch now; applied at once."""
        with self._lock:
            new = [key for key in accounts if key not in self._known]
            self._known = dict(accounts)
        for key in new:
            try:
                self.transact(functools.partial(_adopt, settings=accounts[key]))
            except Exception as exc:
                get_logger().warning("watch: %s: rows of an earlier version not adopted (%s)", key, type(exc).__name__)
        self.wake.set()

    def known(self) -> dict[str, Settings]:
        with self._lock:
            return dict(self._known)

    def run(self, stop: threading.Event) -> None:
        """Renew, balance and watch until `stop`; then give everything up."""
        self.deliveries.start()
        try:
            while not stop.is_set():
                try:
                    wait = self.renew_and_balance()
                except Exception as exc:
                    get_logger().warning("watch: the store could not be reached (%s); trying again", type(exc).__name__)
                    wait = self.lease_seconds / 3
                self.wake.wait(max(0.0, wait))
                self.wake.clear()
        finally:
            self.close()

    def renew_and_balance(self) -> float:
        """One renewal (see the module's docstring), in the store's time; seconds until the next one is due.

        A watcher whose clock is more than `CLOCK_TOLERANCE` from the store's (or whose host's clock jumped) renews
        nothing and takes nothing: it gives up what it holds (`_refuse_clock`) until the clocks agree again.
        """
        known = self.known()
        capacity = self._capacity(len(known))
        started = time.monotonic()
        try:
            with self.store.transaction() as tx:
                now = self._checked_time(tx)
                renew(tx, self.holder, capacity if self.member else None, now, self.lease_seconds)
                view = fleet_view(tx, self.holder, now)
        except ClockRefused as refused:
            self._refuse_clock(str(refused))
            return self.lease_seconds / 3
        if self._clock_refused is not None:
            self._clock_refused = None
            get_logger().info("watch: this host's clock agrees with the store's again; leases are taken again")
        mine = view.held | view.cleared
        self._lease_until = {account: started + self.lease_seconds for account in mine}
        for account in set(self._watching) - mine:
            get_logger().warning("watch: %s lease lost to another watcher (it took the account over)", account)
            self._stop_watching(account)
        keep = (view.held & known.keys()) - self._releasing
        share = self._share(view, capacity)
        chosen = plan(
            self.holder,
            keep,
            view.free & known.keys(),
            share=share,
            capacity=capacity,
            unclaimed=self._unclaimed,
            others_short=someone_short(view.members, shares(view.members, self._to_share(view)), self.holder),
        )
        for account in (mine - keep - self._releasing) | set(chosen.release):
            self._stop_watching(account)
            self._releasing.add(account)
            why = (
                "its webhook was cleared"
                if account in view.cleared
                else "it left the accounts file"
                if account not in known
                else "another watcher takes it over"
            )
            get_logger().info("watch: %s given up (%s)", account, why)
        taken = self._take(chosen.take, now, started)
        self._release_idle()
        for account in keep - set(chosen.release):
            self._watch(account, known[account])
        for account in taken:
            self._watch(account, known[account])
        self._write_heard()
        self._unclaimed = view.free - set(taken)
        self._say(len(keep) - len(chosen.release) + len(taken), share, view)
        wait = self.lease_seconds / 3
        if view.next_expiry is not None:
            wait = min(wait, view.next_expiry + AFTER_EXPIRY - now)
        return wait

    def _checked_time(self, tx: Tx) -> float:
        """The store's time; `ClockRefused` when this process's clock is more than `CLOCK_TOLERANCE` from it."""
        mine = time.time()
        now = store_time(tx)
        if abs(mine - now) > CLOCK_TOLERANCE:
            raise ClockRefused(
                f"this host's clock is {apart(mine - now)} of the store's ({_WHOSE[tx.postgres]}), more than "
                f"{CLOCK_TOLERANCE:g} s, so no lease is taken until they agree: set this host's time (NTP)"
            )
        return now

    def _refuse_clock(self, why: str) -> None:
        """Stop watching and give up every lease and the member row, so that watchers with the right time take the
        accounts over; one log line when this begins (or its reason changes)."""
        for account in list(self._watching):
            self._stop_watching(account)
        self._releasing |= set(self._lease_until)
        with contextlib.suppress(Exception):
            self._release_idle()  # an account with an attempt in flight is given up once it ended
            with self.store.transaction() as tx:
                forget_member(tx, self.holder)
        if why != self._clock_refused:
            self._clock_refused = why
            get_logger().warning("watch: %s", why)

    def _capacity(self, known: int) -> int:
        return known if self.max_accounts is None else min(known, self.max_accounts)

    def _to_share(self, view: FleetView) -> int:
        """The accounts the members share: every one with a webhook, but those a non-member holds."""
        return max(0, view.webhooks - view.pinned)

    def _share(self, view: FleetView, capacity: int) -> int:
        if not self.member:
            return capacity
        return shares(view.members, self._to_share(view)).get(self.holder, 0)

    def _take(self, accounts: tuple[str, ...], now: float, started: float) -> list[str]:
        """Take the free `accounts` at the store's time `now` (read at `started`, on the monotonic clock)."""
        if not accounts:
            return []
        with self.store.transaction() as tx:
            taken = take_leases(tx, accounts, self.holder, now, self.lease_seconds)
        self._lease_until.update({account: started + self.lease_seconds for account in taken})
        for account in taken:
            get_logger().info("watch: %s active", account)
        return taken

    def _release_idle(self) -> None:
        """Give up the leases being given up whose account has no attempt in flight any more."""
        idle = {account for account in self._releasing if not self.deliveries.busy(account)}
        if not idle:
            return
        with self.store.transaction() as tx:
            release_leases(tx, idle, self.holder)
        self._releasing -= idle
        for account in idle:
            self._lease_until.pop(account, None)

    def _watch(self, account: str, settings: Settings) -> None:
        """Watch and deliver `account` (again, with new settings after a reload changed them)."""
        running = self._watching.get(account)
        if running is not None and running.settings == settings and not running.watcher.stopped:
            return
        if running is not None:
            running.watcher.stop()
        watcher = InboxWatcher(settings.imap, settings.webhooks, self.transact, lambda: self.deliveries.due(account))
        self._watching[account] = _Watching(watcher, settings)
        threading.Thread(target=watcher.run, name=f"watch {account}", daemon=True).start()
        self.deliveries.add(account, settings.webhooks)

    def _stop_watching(self, account: str) -> None:
        running = self._watching.pop(account, None)
        if running is not None:
            running.watcher.stop()
        self.deliveries.remove(account)

    def _write_heard(self) -> None:
        """When each watched mailbox last answered, for the status (`last_heard_at`, in the store's time), in one
        transaction."""
        fresh = [
            (account, w)
            for account, w in self._watching.items()
            if w.watcher.heard_at is not None and w.watcher.heard_at != w.heard_written
        ]
        if not fresh:
            return
        with self.store.transaction() as tx:
            now, counted = store_time(tx), time.monotonic()
            for account, watching in fresh:
                heard = watching.watcher.heard_at
                assert heard is not None  # chosen above
                tx.run(
                    "UPDATE mailbox_marks SET last_heard_at = ? WHERE account = ? AND mailbox = ?",
                    now - (counted - heard),
                    account,
                    MAILBOX,
                )
                watching.heard_written = heard

    def _say(self, holding: int, share: int, view: FleetView) -> None:
        """One log line whenever what this watcher holds, its share or the number of watchers changes."""
        said = (holding, share, len(view.members), view.webhooks)
        if said == self._said:
            return
        self._said = said
        if holding == 0 and view.webhooks and not view.free:
            get_logger().info("watch: standing by (another watcher is active for the accounts it could watch)")
            return
        members = f"{len(view.members)} watcher(s) sharing them" if self.member else "named accounts only"
        get_logger().info(
            "watch: holding %d of %d account(s) with a webhook (share %d; %s)", holding, view.webhooks, share, members
        )

    def close(self) -> None:
        """Stop watching, let attempts in flight end, then give up every lease and the member row."""
        for account in list(self._watching):
            self._stop_watching(account)
        self.deliveries.stop(POST_TIMEOUT + 1)
        with contextlib.suppress(Exception), self.store.transaction() as tx:
            leave(tx, self.holder)
        self._store_threads.shutdown(wait=False)


def _adopt(tx: Tx, settings: Settings) -> None:
    """Adopt the rows an earlier version kept under the account's old name (`rows.adopt_legacy_rows`)."""
    account, legacy = settings.imap.account, settings.imap.legacy_account
    tx.lock_account(legacy)
    if adopt_legacy_rows(tx, StoreCipher([key.reveal() for key in settings.webhooks.store_keys]), account, legacy):
        get_logger().info("webhook rows of %s are now kept under %s (the port names it too)", legacy, account)
