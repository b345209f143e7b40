"""Who watches which account: a lease per account in the store, which its holder renews and others wait out.

A watcher that shares the accounts with others (`fleet`) is also a *member*: a row in `watchers`
saying until when it is alive and how many accounts it may hold. Every renewal is one transaction:
the member's row and all of its leases move on together, so they expire together when it dies.
Taking a lease is conditional (free, or expired), so two watchers never both take one. Every `now` here is the
store's time (`store.clock`), read in the transaction that uses it: never a watcher's own clock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ..store.database import Store, Tx
from .balancing import Member

#: how long a lease lasts without renewal; a killed watcher's accounts are taken over after this
LEASE_SECONDS = 15.0

_TAKE = (
    "INSERT INTO watcher_leases (account, holder, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (account) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at "
    "WHERE watcher_leases.holder = excluded.holder OR watcher_leases.expires_at < ?"
)


def hold_lease(store: Store, account: str, holder: str, now: float, seconds: float = LEASE_SECONDS) -> bool:
    """Take or renew the account's lease for `holder`; False while another holder's lease is alive."""
    with store.transaction() as tx:
        return tx.run(_TAKE, account, holder, now + seconds, now) > 0


@dataclass(frozen=True)
class FleetView:
    """What one watcher sees of the store at a renewal."""

    #: the members alive, each with how many live leases it holds
    members: tuple[Member, ...]
    #: the accounts whose lease this watcher holds (renewed just now) and that still have a webhook
    held: frozenset[str]
    #: the accounts whose lease this watcher holds although their webhook was cleared
    cleared: frozenset[str]
    #: the accounts with a webhook and no live lease
    free: frozenset[str]
    #: how many accounts have a webhook
    webhooks: int
    #: how many accounts a live holder that is no member holds (`watch --account NAME`, an earlier version)
    pinned: int
    #: when the first other member's row runs out unless renewed (its holder may have died then), or None
    next_expiry: float | None


def renew(tx: Tx, holder: str, capacity: int | None, now: float, seconds: float) -> None:
    """Renew every lease of `holder` and, unless `capacity` is None (a watcher of named accounts), its member row;
    forget members whose row ran out."""
    tx.run("UPDATE watcher_leases SET expires_at = ? WHERE holder = ?", now + seconds, holder)
    tx.run("DELETE FROM watchers WHERE expires_at <= ?", now)
    if capacity is None:
        return
    tx.run(
        "INSERT INTO watchers (holder, capacity, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT (holder) DO UPDATE SET capacity = excluded.capacity, expires_at = excluded.expires_at",
        holder,
        capacity,
        now + seconds,
    )


def fleet_view(tx: Tx, holder: str, now: float) -> FleetView:
    """The members, this watcher's leases, the free accounts and the counts the shares are made of, at `now`."""
    holding = {str(h): int(n) for h, n in tx.all(_HOLDING, now)}
    rows = tx.all("SELECT holder, capacity, expires_at FROM watchers WHERE expires_at > ?", now)
    members = tuple(Member(str(h), int(c), holding.get(str(h), 0)) for h, c, _ in rows)
    mine = tx.all(
        "SELECT l.account, w.account FROM watcher_leases l LEFT JOIN webhooks w ON w.account = l.account "
        "WHERE l.holder = ?",
        holder,
    )
    free = tx.all(
        "SELECT w.account FROM webhooks w LEFT JOIN watcher_leases l ON l.account = w.account AND l.expires_at > ? "
        "WHERE l.account IS NULL",
        now,
    )
    count = tx.one("SELECT COUNT(*) FROM webhooks")
    names = {m.holder for m in members}
    expiries = [float(e) for h, _, e in rows if h != holder]
    return FleetView(
        members=members,
        held=frozenset(str(a) for a, w in mine if w is not None),
        cleared=frozenset(str(a) for a, w in mine if w is None),
        free=frozenset(str(a) for (a,) in free),
        webhooks=int(count[0]) if count else 0,
        pinned=sum(n for h, n in holding.items() if h not in names and h != holder),
        next_expiry=min(expiries, default=None),
    )


_HOLDING = "SELECT holder, COUNT(*) FROM watcher_leases WHERE expires_at > ? GROUP BY holder"


def take_leases(tx: Tx, accounts: Iterable[str], holder: str, now: float, seconds: float) -> list[str]:
    """Take each account's lease that is free or expired; the accounts taken."""
    return [account for account in accounts if tx.run(_TAKE, account, holder, now + seconds, now) > 0]


def release_leases(tx: Tx, accounts: Collection[str], holder: str) -> None:
    for account in accounts:
        tx.run("DELETE FROM watcher_leases WHERE account = ? AND holder = ?", account, holder)


def leave(tx: Tx, holder: str) -> None:
    """Give up every lease and the member row: the others take the accounts over at their next renewal."""
    tx.run("DELETE FROM watcher_leases WHERE holder = ?", holder)
    forget_member(tx, holder)


def forget_member(tx: Tx, holder: str) -> None:
    """Remove the member row: the others share the accounts as if this watcher were gone."""
    tx.run("DELETE FROM watchers WHERE holder = ?", holder)


def live_members(tx: Tx, now: float) -> int:
    found = tx.one("SELECT COUNT(*) FROM watchers WHERE expires_at > ?", now)
    return int(found[0]) if found else 0
