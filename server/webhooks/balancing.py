"""How watchers share the accounts: each one's share, and what one watcher takes or gives up at a renewal.

Pure arithmetic over what a watcher read from the store (`leases.fleet_view`), so every member,
reading the same rows, computes the same shares.

The shares fill up like water: the accounts are dealt out one member at a time, smallest capacity
(`watch --max-accounts`) first, each member getting the rest divided by the members still to
serve (rounded up) but never more than its capacity. Among members of equal capacity, those that
already hold more come first, so a share rounded up stays where the accounts already are. The
shares add up to the accounts to watch whenever the capacities allow.

A member over its share gives up the difference, but only while another member is under its own
(someone will take them); one under its share takes free accounts up to it. A free account nobody
took by the next renewal (every member at its share, or only this one knows the account) is taken
by any member with room left under its capacity.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    """A watcher alive: who, how many accounts it may hold, how many it holds."""

    holder: str
    capacity: int
    holding: int


@dataclass(frozen=True)
class Moves:
    """The leases one watcher takes and gives up at its next renewal."""

    take: tuple[str, ...] = ()
    release: tuple[str, ...] = ()


def shares(members: Sequence[Member], total: int) -> dict[str, int]:
    """Each member's share of `total` accounts (see the module's docstring)."""
    order = sorted(members, key=lambda m: (m.capacity, -m.holding, m.holder))
    remaining, found = total, {}
    for position, member in enumerate(order):
        share = max(0, min(member.capacity, -(-remaining // (len(order) - position))))
        found[member.holder] = share
        remaining -= share
    return found


def preference(holder: str, account: str) -> bytes:
    """The order in which `holder` takes accounts (and, last first, gives them up): a different one per holder,
    so members taking at the same moment rarely reach for the same account."""
    return hashlib.sha256(f"{holder}\x00{account}".encode()).digest()


def plan(
    holder: str,
    held: Collection[str],
    free: Collection[str],
    *,
    share: int,
    capacity: int,
    unclaimed: Collection[str],
    others_short: bool,
) -> Moves:
    """What `holder` takes and gives up now.

    `held`: the accounts it holds and may keep; `free`: those it could take; `unclaimed`: those among them that
    were already free at its last renewal; `others_short`: whether another member holds fewer than its share.
    """
    if len(held) > share and others_short:
        surplus = sorted(held, key=lambda a: preference(holder, a), reverse=True)
        return Moves(release=tuple(surplus[: len(held) - share]))
    candidates = sorted(free, key=lambda a: preference(holder, a))
    wanted = max(0, min(share, capacity) - len(held))
    take = candidates[:wanted]
    room = max(0, capacity - len(held) - len(take))
    strays = [a for a in candidates[wanted:] if a in unclaimed][:room]
    return Moves(take=tuple(take + strays))


def someone_short(members: Sequence[Member], found: Mapping[str, int], holder: str) -> bool:
    """Whether a member other than `holder` holds fewer accounts than its share."""
    return any(m.holding < found.get(m.holder, 0) for m in members if m.holder != holder)
