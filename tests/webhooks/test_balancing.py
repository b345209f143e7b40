"""How watchers share the accounts (`webhooks.balancing`), run over a lease table in memory.

Each round one member renews, in a random order, as `fleet` does: it reads who holds what, works
out its share and applies its plan (taking only free accounts, as the store's conditional take
does). The real thing, with processes, a real store and mail, is `test_fleet.py`.
"""

from __future__ import annotations

import random

import pytest

from imap_mcp.server.webhooks.balancing import Member, plan, shares, someone_short


class Table:
    """A store's leases and members, and members renewing against them."""

    def __init__(self, accounts: int, seed: int) -> None:
        self.accounts = [f"a{n:03d}@imap.example:993" for n in range(accounts)]
        self.leases: dict[str, str] = {}
        self.capacity: dict[str, int] = {}
        self.unclaimed: dict[str, frozenset[str]] = {}
        self.rng = random.Random(seed)

    def members(self) -> list[Member]:
        return [
            Member(h, c, sum(1 for holder in self.leases.values() if holder == h)) for h, c in self.capacity.items()
        ]

    def renew(self, holder: str) -> None:
        members = self.members()
        found = shares(members, len(self.accounts))
        held = {a for a, h in self.leases.items() if h == holder}
        free = frozenset(a for a in self.accounts if a not in self.leases)
        chosen = plan(
            holder,
            held,
            free,
            share=found[holder],
            capacity=self.capacity[holder],
            unclaimed=self.unclaimed.get(holder, frozenset()),
            others_short=someone_short(members, found, holder),
        )
        for account in chosen.release:
            del self.leases[account]
        taken = [a for a in chosen.take if a not in self.leases]
        self.leases.update(dict.fromkeys(taken, holder))
        self.unclaimed[holder] = free - set(taken)

    def rounds(self, count: int) -> None:
        for _ in range(count):
            holders = list(self.capacity)
            self.rng.shuffle(holders)
            for holder in holders:
                self.renew(holder)

    def holding(self) -> dict[str, int]:
        return {m.holder: m.holding for m in self.members()}

    def die(self, holder: str) -> None:
        """The member stops renewing: once its leases and row ran out, they are gone from what others read."""
        del self.capacity[holder]
        self.leases = {a: h for a, h in self.leases.items() if h != holder}


def test_shares_add_up_and_respect_each_capacity() -> None:
    members = [Member("a", 1000, 0), Member("b", 1000, 0), Member("c", 1000, 0)]
    assert sorted(shares(members, 10).values()) == [3, 3, 4]
    bounded = [Member("small", 2, 0), Member("b", 1000, 0), Member("c", 1000, 0)]
    assert shares(bounded, 10) == {"small": 2, "b": 4, "c": 4}
    assert shares([Member("small", 2, 0)], 10) == {"small": 2}
    assert shares([], 10) == {}


def test_the_rounded_up_share_goes_to_who_already_holds_more() -> None:
    members = [Member("a", 100, 0), Member("b", 100, 7)]
    assert shares(members, 13) == {"b": 7, "a": 6}


@pytest.mark.parametrize("seed", range(5))
def test_members_joining_and_dying_converge_on_every_account_held_once_near_each_share(seed: int) -> None:
    table = Table(100, seed)
    table.capacity["w1"] = 100
    table.rounds(2)
    assert table.holding() == {"w1": 100}
    table.capacity["w2"] = 100
    table.capacity["w3"] = 100
    table.rounds(4)
    assert sorted(table.holding().values()) == [33, 33, 34]
    assert len(table.leases) == 100
    table.die("w2")
    table.rounds(3)
    assert sorted(table.holding().values()) == [50, 50] and len(table.leases) == 100


def test_a_bounded_member_holds_at_most_its_capacity_and_the_others_take_the_rest() -> None:
    table = Table(10, seed=1)
    table.capacity.update(small=2, big=100)
    table.rounds(4)
    assert table.holding() == {"small": 2, "big": 8}
    table.die("big")
    table.rounds(4)
    assert table.holding() == {"small": 2} and len(table.leases) == 2


def test_an_account_only_one_member_may_take_is_taken_beyond_its_share() -> None:
    """A stray: free at two renewals in a row (the other member cannot take it: its file lacks the account)."""
    held, free = {"a1", "a2"}, {"stray"}
    first = plan("w", held, free, share=2, capacity=10, unclaimed=frozenset(), others_short=False)
    later = plan("w", held, free, share=2, capacity=10, unclaimed=frozenset(free), others_short=False)
    assert first.take == () and later.take == ("stray",)


def test_a_member_over_its_share_gives_up_only_while_another_is_short() -> None:
    held = {f"a{n}" for n in range(6)}
    nobody_short = plan("w", held, set(), share=3, capacity=10, unclaimed=frozenset(), others_short=False)
    someone_is = plan("w", held, set(), share=3, capacity=10, unclaimed=frozenset(), others_short=True)
    assert nobody_short.release == () and len(someone_is.release) == 3 and set(someone_is.release) <= held
