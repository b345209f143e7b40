"""One active watcher per account: a lease in the store that its holder renews and others wait out."""

from __future__ import annotations

from ..store.database import Store

#: how long a lease lasts without renewal; a killed watcher's account is taken over after this
LEASE_SECONDS = 15.0


def hold_lease(store: Store, account: str, holder: str, now: float) -> bool:
    """Take or renew the account's lease for `holder`; False while another holder's lease is alive."""
    with store.transaction() as tx:
        changed = tx.run(
            "INSERT INTO watcher_leases (account, holder, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (account) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at "
            "WHERE watcher_leases.holder = excluded.holder OR watcher_leases.expires_at < ?",
            account,
            holder,
            now + LEASE_SECONDS,
            now,
        )
    return changed > 0


def release_lease(store: Store, account: str, holder: str) -> None:
    with store.transaction() as tx:
        tx.run("DELETE FROM watcher_leases WHERE account = ? AND holder = ?", account, holder)
