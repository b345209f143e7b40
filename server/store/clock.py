"""The store's clock: the one time leases, the outbox's retention and webhook signatures are measured in.

Every process that shares a store must measure time alike: one whose clock is ahead would take leases that are
alive, prune events that are not old and sign with times a receiver rejects. So the time is read from the store
(`store_time`), never from the process: PostgreSQL's `now()`, the database server's clock that every replica and
watcher reads alike. A SQLite store lives on one host, so its time is the host's clock; but a host's clock can be
set (by hand, by NTP stepping it, by a restored snapshot), so each reading is checked against the boot clock
(CLOCK_BOOTTIME, which nobody sets) since this process started: a wall clock that moved more than
`CLOCK_TOLERANCE` seconds against it jumped, and the store's time is refused (`ClockRefused`) until the process
restarts. (A process started after the jump reads the host's clock as it is: on one host, every process does.)

A watcher also compares its own clock with the store's at each renewal (`webhooks.fleet`): more than
`CLOCK_TOLERANCE` seconds apart, it takes no lease and says so.
"""

from __future__ import annotations

import time

from .database import StoreError, Tx

#: how far (seconds) a process's clock may be from the store's, or move against the boot clock, before it is refused
CLOCK_TOLERANCE = 5.0


class ClockRefused(StoreError):
    """The time cannot be trusted (a clock jumped, or differs from the store's); the message says what to check."""


def _boot_clock() -> float:
    """Seconds since boot, suspended time included; nobody sets it (a monotonic clock where there is none)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


def apart(seconds: float) -> str:
    """`seconds` of clock difference in words: '691200 s ahead' or '30 s behind'."""
    return f"{abs(seconds):.0f} s {'ahead' if seconds > 0 else 'behind'}"


class _HostClock:
    """The host's clock as this process saw it start, and the boot clock then."""

    def __init__(self) -> None:
        self._wall = time.time()
        self._boot = _boot_clock()

    def now(self) -> float:
        wall, boot = time.time(), _boot_clock()
        jumped = (wall - self._wall) - (boot - self._boot)
        if abs(jumped) > CLOCK_TOLERANCE:
            raise ClockRefused(
                f"This host's clock was set {apart(jumped)} of where it was while this imap-mcp process ran (the boot "
                "clock, which nobody sets, says so), so the SQLite store's time is not trusted: no lease is taken, no "
                "event pruned and no webhook signed by this process. Check the host's time (NTP), then restart it."
            )
        return wall


#: taken when the store is first imported: the process's start, as far as its clock is concerned
_HOST = _HostClock()


def store_time(tx: Tx) -> float:
    """The store's time now (seconds since the epoch), read within `tx`; `ClockRefused` when the host's jumped."""
    if tx.postgres:
        found = tx.one("SELECT EXTRACT(EPOCH FROM now())")
        assert found is not None  # one row, always
        return float(found[0])
    return _HOST.now()
