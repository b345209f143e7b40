"""The approval ledger: one approved effect runs once, whoever replays the approval and whatever a mailbox keeps.

A person's yes may reach imap-mcp many times: a client retrying, a gateway sending twice, two
replicas answering the same retry, a caller replaying a confirm_token. What decides which
attempt acts, and whether the effect already happened, is a row in the store keyed by the
approval itself (`approval_key`: the verified identity of the seal, never its text), not
anything in the mailbox: a mailbox keyword can be set by any tool caller or mail client, and a
server may accept one and keep nothing.

A row moves through these states, each step a compare-and-set on the attempt that holds it
(`holder`), so two attempts can never both take the same step:

- `running`: an attempt holds it and has done nothing that cannot be repeated. An attempt that
  finds it older than the staleness the caller gives (its holder died) takes it over.
- `handing_over`: a send is being handed to the SMTP server. From here on the message may have
  left, so no attempt ever sends it again, however old the row grows.
- `done`: finished; `outcome` says what it did (a small JSON object).
- `unconfirmed`: a send whose SMTP answer was lost after the whole message went out.

An attempt that fails before anything irreversible `release`s its row, so the next replay of the
same approval runs. Rows are kept `KEEP_SECONDS` (far longer than any approval can be replayed)
and then pruned; every time here is the store's (`store.clock`), not the process's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..logs import get_logger
from .clock import store_time
from .database import Store, StoreError, Tx

State = Literal["running", "handing_over", "done", "unconfirmed"]
#: a row `running` this many times IMAP_TIMEOUT belongs to an attempt that died: every attempt runs as pool
#: operations stopped at IMAP_TIMEOUT, so a live one steps on long before
RUNNING_LIFETIME_PER_TIMEOUT = 2
#: how long a row is kept after its last change: an approval is replayable for minutes, never a day
KEEP_SECONDS = 24 * 3600.0
_COLUMNS = "state, holder, since, outcome"


def running_lifetime(timeout: float) -> float:
    """How old a `running` row must be before another attempt may take it over."""
    return RUNNING_LIFETIME_PER_TIMEOUT * timeout


def approval_key(account: str, tool: str, identity: str) -> str:
    """The ledger key of one approval of `tool` on `account` (the identity comes from the verified seal)."""
    canonical = json.dumps([account, tool, identity], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    """A ledger row as one attempt found it."""

    state: State
    holder: str
    since: float
    outcome: dict[str, Any] = field(default_factory=dict)

    def age(self, now: float) -> float:
        return max(0.0, now - self.since)


@dataclass(frozen=True)
class Begun:
    """What `Ledger.begin` found: this attempt holds the approval (`holder` set), or another row decides
    (`entry`). `taken_over` is the row of a dead attempt this one took over, with what it had recorded."""

    holder: str | None
    entry: Entry | None = None
    taken_over: Entry | None = None

    @property
    def owned(self) -> bool:
        return self.holder is not None


class Ledger:
    """The approval ledger in `store`."""

    def __init__(self, store: Store, clock: Callable[[], float] | None = None) -> None:
        self.store = store
        #: a clock of its own (tests); by default the store's (`store.clock`), so that a replica whose clock is ahead
        #: prunes no row early and takes over no live attempt
        self.clock = clock

    def _now(self, tx: Tx) -> float:
        return self.clock() if self.clock is not None else store_time(tx)

    def begin(
        self, key: str, account: str, tool: str, stale_after: float, outcome: dict[str, Any] | None = None
    ) -> Begun:
        """Hold the approval `key` for a new attempt (recording `outcome` with it), take over a `running` row older
        than `stale_after` seconds (keeping what its dead attempt recorded), or report the row that decides."""
        holder = secrets.token_hex(16)
        with self.store.transaction() as tx:
            self.store.check_identity(tx)  # a store made again knows nothing of what ran: never run on it
            now = self._now(tx)
            tx.run("DELETE FROM approval_ledger WHERE kept_until < ?", now)
            inserted = tx.run(
                "INSERT INTO approval_ledger (approval, account, tool, state, holder, since, kept_until, outcome) "
                "VALUES (?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (approval) DO NOTHING",
                key,
                account,
                tool,
                holder,
                now,
                now + KEEP_SECONDS,
                json.dumps(outcome or {}, separators=(",", ":")),
            )
            if inserted:
                return Begun(holder)
            found = tx.one(f"SELECT {_COLUMNS} FROM approval_ledger WHERE approval = ?" + _for_update(tx), key)
            if found is None:  # pruned between the two statements: cannot happen inside one transaction
                raise RuntimeError("the approval ledger lost a row inside a transaction")
            entry = _entry(found)
            if entry.state != "running" or entry.age(now) <= stale_after:
                return Begun(None, entry)
            tx.run(
                "UPDATE approval_ledger SET holder = ?, since = ?, kept_until = ? WHERE approval = ? AND holder = ?",
                holder,
                now,
                now + KEEP_SECONDS,
                key,
                entry.holder,
            )
            return Begun(holder, taken_over=entry)

    def advance(self, key: str, holder: str, state: State, outcome: dict[str, Any] | None = None) -> bool:
        """Move the row to `state` (and record `outcome`) if `holder` still holds it; False if it does not."""
        recorded = None if outcome is None else json.dumps(outcome, separators=(",", ":"))
        with self.store.transaction() as tx:
            now = self._now(tx)
            changed = tx.run(
                "UPDATE approval_ledger SET state = ?, since = ?, kept_until = ?, outcome = COALESCE(?, outcome) "
                "WHERE approval = ? AND holder = ? AND state IN ('running', 'handing_over')",
                state,
                now,
                now + KEEP_SECONDS,
                recorded,
                key,
                holder,
            )
        return changed > 0

    def release(self, key: str, holder: str) -> None:
        """Remove the row of `holder`'s attempt, which knows its effect did not happen (a send SMTP refused), so
        a replay of the approval runs."""
        with self.store.transaction() as tx:
            tx.run(
                "DELETE FROM approval_ledger WHERE approval = ? AND holder = ? "
                "AND state IN ('running', 'handing_over')",
                key,
                holder,
            )

    def release_if_possible(self, key: str, holder: str) -> None:
        """`release`, where a store that fails only delays the replay (the row is taken over once older than its
        lifetime): logged, never raised over the error that made the attempt release."""
        try:
            self.release(key, holder)
        except StoreError as exc:
            get_logger().warning("approval ledger: releasing an approval failed (%s)", exc)

    def latest_with(self, account: str, target: str, within: float) -> Entry | None:
        """The newest row of `account` that finished (`done` or `unconfirmed`) in the last `within` seconds of the
        store's clock and recorded `target` (a target's fingerprint, hex) in its outcome: an identical effect
        approved earlier."""
        with self.store.transaction() as tx:  # rows change `since` and `kept_until` together: the index finds them
            since = self._now(tx) - within
            rows = tx.all(
                f"SELECT {_COLUMNS} FROM approval_ledger WHERE kept_until >= ? AND account = ? "
                "AND state IN ('done', 'unconfirmed') AND outcome LIKE ? ORDER BY since DESC",
                since + KEEP_SECONDS,
                account,
                f'%"target":"{target}"%',
            )
        found = [_entry(row) for row in rows]
        return next((entry for entry in found if entry.outcome.get("target") == target), None)

    def entry(self, key: str) -> Entry | None:
        """The row of `key`, if any (for tests and status)."""
        with self.store.transaction() as tx:
            found = tx.one(f"SELECT {_COLUMNS} FROM approval_ledger WHERE approval = ?", key)
        return _entry(found) if found is not None else None


@functools.lru_cache(maxsize=32)
def ledger_at(url: str) -> Ledger:
    """The ledger in the store at `url`, opened (and migrated) once per process; `StoreError` when it cannot be."""
    return Ledger(Store(url))


def writable_store_at(url: str) -> str:
    """The identity of the store at `url`, opened once per process, after a write showed it records approvals now
    (`Store.writable_identity`); `StoreError` when it does not."""
    return ledger_at(url).store.writable_identity()


def begin_at(
    url: str, key: str, account: str, tool: str, stale_after: float, outcome: dict[str, Any] | None = None
) -> tuple[Ledger, Begun]:
    """`Ledger.begin` in the store at `url`, opening it first if this process has not: one call, one thread hop."""
    ledger = ledger_at(url)
    return ledger, ledger.begin(key, account, tool, stale_after, outcome)


def _for_update(tx: Tx) -> str:
    """PostgreSQL: hold the row until commit (SQLite holds the whole database from BEGIN IMMEDIATE)."""
    return " FOR UPDATE" if tx.postgres else ""


def _entry(row: tuple[Any, ...]) -> Entry:
    state, holder, since, outcome = row
    return Entry(state=state, holder=holder, since=float(since), outcome=json.loads(outcome or "{}"))
