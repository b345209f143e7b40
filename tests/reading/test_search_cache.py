"""The search-order cache only skips recomputing a result the unchanged mailbox would give again."""

from __future__ import annotations

import datetime as dt
import functools
import random
from array import array
from typing import Any

import pytest
from harness import Account, append_message, plain_mail, served, structured
from hypothesis import given, settings
from hypothesis import strategies as st
from imapclient import IMAPClient

from imap_mcp.server.imap.mailbox_state import enable_qresync, vanished_and_changed
from imap_mcp.server.imap.pool import ImapPool, InMailbox, examine
from imap_mcp.server.reading.search import SearchQuery, search_page
from imap_mcp.server.reading.search_cache import OrderCache, _without
from imap_mcp.server.reading.summaries import SummaryCache

pytestmark = pytest.mark.anyio


def page(
    client: IMAPClient, cache: OrderCache | None, summaries: SummaryCache | None = None, **query: Any
) -> tuple[int, list[int]]:
    result = search_page(client, examine(client, "INBOX"), SearchQuery(**query), cache, summaries)
    return result.total, [m.uid for m in result.messages]


@pytest.mark.servers("dovecot", "cyrus", reason="an order is kept only where CONDSTORE shows no flag changed")
def test_an_unchanged_mailbox_reuses_the_order(account: Account, client: IMAPClient) -> None:
    cache = OrderCache()
    first = page(client, cache)
    second = page(client, cache)
    assert second == first and cache.hits == 1


@pytest.mark.matrix
def test_new_mail_is_seen_at_once(account: Account, client: IMAPClient) -> None:
    cache = OrderCache()
    total, _ = page(client, cache)
    uid = append_message(account, plain_mail("fresh"))
    total_after, uids = page(client, cache)
    assert total_after == total + 1 and uids[0] == uid
    assert cache.hits == 0


@pytest.mark.matrix
def test_a_flag_change_by_another_client_is_seen(account: Account, client: IMAPClient) -> None:
    cache = OrderCache()
    unread_total, unread = page(client, cache, unread_only=True)
    other = account.imap()
    try:
        other.select_folder("INBOX")
        other.add_flags([unread[0]], [b"\\Seen"])
    finally:
        other.logout()
    total_after, uids = page(client, cache, unread_only=True)
    assert total_after == unread_total - 1 and unread[0] not in uids
    assert cache.hits == 0


@pytest.mark.matrix
def test_an_expunge_by_another_client_is_seen(account: Account, client: IMAPClient) -> None:
    cache = OrderCache()
    total, uids = page(client, cache)
    other = account.imap()
    try:
        other.select_folder("INBOX")
        other.add_flags([uids[0]], [b"\\Deleted"])
        other.expunge()  # the only message marked \\Deleted; not UID EXPUNGE, which Mailutils lacks (no UIDPLUS)
    finally:
        other.logout()
    total_after, uids_after = page(client, cache)
    assert total_after == total - 1 and uids[0] not in uids_after


@pytest.mark.matrix
async def test_the_tool_reflects_a_change_between_two_identical_searches(account: Account) -> None:
    async with served(account) as mcp_client:
        before = structured(await mcp_client.call_tool("search_messages", {}))
        append_message(account, plain_mail("arrived between calls"))
        after = structured(await mcp_client.call_tool("search_messages", {}))
    assert after["total"] == before["total"] + 1
    assert after["messages"][0]["subject"] == "arrived between calls"


#: searches the interleaving test keeps comparing: everything, content only, flags only, both
INTERLEAVED_QUERIES: list[dict[str, Any]] = [
    {},
    {"sender": "zoe"},
    {"unread_only": True},
    {"flagged_only": True, "sender": "zoe"},
]


#: rounds per random interleaving, each of one search per query on average: Cyrus answers each command
#: several times slower than Dovecot, so its runs are shorter (the same code paths; the seeds vary them)
STEPS = {"dovecot": 30, "cyrus": 18}
#: how often another client changes the mailbox after a search: one change per round on average, so
#: any search may meet changes the others have already brought into the caches
CHANGE_RATE = 1 / len(INTERLEAVED_QUERIES)


def _random_step(rng: random.Random, other: IMAPClient, clock: list[dt.datetime]) -> None:
    """One change by another client: an append (now, at the same second as the last, or long ago), an
    expunge (of any message, or of the newest), or a flag set or cleared."""
    uids = other.search(["ALL"])
    action = rng.choice(["append", "append", "append_tie", "append_old", "expunge", "expunge_newest", "flag", "flag"])
    if action.startswith("append") or not uids:
        if action == "append_old":
            when = dt.datetime(2019, rng.randint(1, 12), rng.randint(1, 28), tzinfo=dt.UTC)
        else:
            if action != "append_tie":
                clock[0] += dt.timedelta(minutes=rng.randint(1, 90))
            when = clock[0]
        sender = rng.choice(["zoe@example.com", "max@example.net"])
        other.append(
            "INBOX", plain_mail(f"step {rng.random()}", sender), flags=rng.choice([(), (b"\\Seen",)]), msg_time=when
        )
        return
    uid = max(uids) if action == "expunge_newest" else rng.choice(uids)  # the newest: shown, maybe cached, by now
    if action.startswith("expunge"):
        other.add_flags([uid], [b"\\Deleted"])
        other.uid_expunge([uid])
        return
    flag = rng.choice([b"\\Seen", b"\\Flagged"])
    (other.add_flags if rng.random() < 0.5 else other.remove_flags)([uid], [flag])


@pytest.mark.servers("dovecot", "cyrus", reason="the order is kept up to date only where CONDSTORE reports changes")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("qresync", [False, True], ids=["search-for-what-left", "qresync-vanished"])
def test_random_interleavings_of_changes_and_searches_match_a_fresh_search(
    account: Account, seed: int, qresync: bool
) -> None:
    """With QRESYNC enabled (as every pooled connection has it where offered) the messages that left are
    named by VANISHED; without, they are found by a search. Both must match a fresh search at every step."""
    rng = random.Random(seed)
    cache, summaries = OrderCache(), SummaryCache()
    client = account.imap()
    if qresync:
        enable_qresync(client)
    other = account.imap()
    other.select_folder("INBOX")
    clock = [dt.datetime(2026, 11, 1, tzinfo=dt.UTC)]
    try:
        for step in range(STEPS[account.server_name] * len(INTERLEAVED_QUERIES)):
            query = rng.choice(INTERLEAVED_QUERIES)
            cached = page(client, cache, summaries, limit=100, **query)
            assert cached == page(client, None, limit=100, **query), (seed, step, query)
            if rng.random() < CHANGE_RATE:
                _random_step(rng, other, clock)
        asked_server = vanished_and_changed(client, 1, "1:*")
    finally:
        other.logout()
        client.logout()
    assert cache.updates > 0 and cache.hits > 0 and cache.memory_bytes() > 0
    assert (asked_server is not None) == qresync  # the path named in the test id is the one that ran


@pytest.mark.servers("dovecot", "cyrus", reason="the order is kept up to date only where CONDSTORE reports changes")
@pytest.mark.parametrize("seed", range(2))
def test_random_interleavings_on_a_kept_examined_mailbox_match_a_fresh_search(account: Account, seed: int) -> None:
    """As the pool runs searches: the mailbox stays examined between them, so what left may be known from
    what the session was told (QRESYNC VANISHED, where the server says which HIGHESTMODSEQ each NOOP
    reached: Dovecot). Every page must match a fresh search on another connection."""
    rng = random.Random(seed)
    cache, summaries = OrderCache(), SummaryCache()
    pool = ImapPool(account.imap_settings(), max_size=1)
    fresh, other = account.imap(), account.imap()
    other.select_folder("INBOX")
    clock = [dt.datetime(2026, 11, 1, tzinfo=dt.UTC)]
    try:
        for step in range(STEPS[account.server_name] * len(INTERLEAVED_QUERIES)):
            query = rng.choice(INTERLEAVED_QUERIES)
            search = functools.partial(
                search_page, query=SearchQuery(limit=100, **query), cache=cache, summaries=summaries
            )
            kept = pool.run_sync(InMailbox("INBOX", search))
            expected = page(fresh, None, limit=100, **query)
            assert (kept.total, [m.uid for m in kept.messages]) == expected, (seed, step, query)
            if rng.random() < CHANGE_RATE:
                _random_step(rng, other, clock)
    finally:
        pool.close_all()
        other.logout()
        fresh.logout()
    assert cache.updates > 0 and cache.hits > 0
    if account.server_name == "dovecot":
        assert cache.told > 0  # the journal path ran


#: UIDs whose bytes, side by side in memory, also spell other UIDs (256 is 00 01 00 00; 1 then 0 hold it)
UIDS = st.one_of(
    st.integers(1, 300), st.sampled_from([256, 65536, 16777216, 16777217, 2**32 - 1]), st.integers(1, 2**32 - 1)
)


@settings(max_examples=500, deadline=None)
@given(uids=st.lists(UIDS, unique=True, max_size=120), data=st.data())
def test_removing_uids_keeps_the_rest_in_order(uids: list[int], data: st.DataObject) -> None:
    """Both ways `_without` works (a few UIDs looked up, many passed over) give the same order."""
    remembered = st.sampled_from(uids) if uids else UIDS
    gone = data.draw(st.sets(st.one_of(remembered, UIDS), max_size=40))
    ordered = array("I", uids)
    assert list(_without(ordered, gone)) == [uid for uid in uids if uid not in gone]
    assert list(ordered) == uids  # a remembered order is never changed in place: readers may hold it
