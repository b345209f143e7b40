"""search_messages on servers without SORT (and without ESEARCH): the same answers, in the same order."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from harness import INBOX_NEWEST_FIRST, Account, new_account, search, served, start_dovecot

from imap_mcp.server.demo.dovecot import DEFAULT_CAPS, Dovecot
from imap_mcp.server.demo.sample_mail import seed

pytestmark = pytest.mark.anyio

SORTING = {"SORT", "SORT=DISPLAY", "ESORT", "CONTEXT=SORT"}
SEARCH_EXTENSIONS = {"ESEARCH", "CONTEXT=SEARCH", "SEARCHRES"}


def capabilities_without(hidden: set[str]) -> str:
    return " ".join(c for c in DEFAULT_CAPS.split() if c not in hidden)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(SORTING, id="no-sort-with-esearch"),
        pytest.param(SORTING | SEARCH_EXTENSIONS, id="no-sort-no-esearch"),
    ],
)
def limited_dovecot(request: pytest.FixtureRequest) -> Iterator[Dovecot]:
    caps = capabilities_without(request.param)
    instance = start_dovecot(extra_config=[f"protocol imap {{\n  imap_capability = {caps}\n}}"])
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def limited_account(limited_dovecot: Dovecot) -> Account:
    account = new_account(limited_dovecot)
    client = account.imap()
    try:
        seed(client)
        client.append(
            "INBOX",
            b"Subject: Delivered late\r\nFrom: late@example.com\r\n\r\nold news\r\n",
            msg_time=dt.datetime(2026, 10, 2, 9, tzinfo=dt.UTC),
        )
    finally:
        client.logout()
    return account


def test_the_server_really_hides_sort(limited_account: Account, limited_dovecot: Dovecot) -> None:
    client = limited_account.imap()
    try:
        assert not client.has_capability("SORT")
    finally:
        client.logout()


async def test_order_totals_and_filters_match_the_sort_path(limited_account: Account) -> None:
    expected = [*INBOX_NEWEST_FIRST[:-1], "Delivered late", INBOX_NEWEST_FIRST[-1]]
    async with served(limited_account) as client:
        pages = [await search(client, offset=offset, limit=4) for offset in (0, 4, 8)]
        assert [p["total"] for p in pages] == [10, 10, 10]
        assert [m["subject"] for p in pages for m in p["messages"]] == expected
        umlauts = await search(client, text="nächste Woche")
        assert [m["subject"] for m in umlauts["messages"]] == ["Grüße aus München"]
        dated = await search(client, since="2026-10-02", before="2026-10-05")
        assert [m["subject"] for m in dated["messages"]] == ["Team lunch on Friday?", "Delivered late"]
        assert (await search(client, subject="no such words"))["total"] == 0


def account_with_ties(server: Dovecot, ties: int = 3) -> Account:
    """`ties` messages received in the same second, then one received a day earlier but appended last."""
    account = new_account(server)
    client = account.imap()
    tie = dt.datetime(2026, 10, 20, 8, tzinfo=dt.UTC)
    try:
        for n in range(ties):
            client.append("INBOX", f"Subject: tie {n}\r\nFrom: tie@example.com\r\n\r\nx\r\n".encode(), msg_time=tie)
        client.append(
            "INBOX", b"Subject: older\r\nFrom: tie@example.com\r\n\r\nx\r\n", msg_time=tie - dt.timedelta(days=1)
        )
    finally:
        client.logout()
    return account


async def test_equal_dates_page_alike_with_and_without_sort(dovecot: Dovecot, limited_dovecot: Dovecot) -> None:
    """Newest first: among equal INTERNALDATEs the later arrival (higher UID) first, with SORT and without."""
    orders = []
    for server in (dovecot, limited_dovecot):
        async with served(account_with_ties(server).settings()) as client:
            pages = [await search(client, offset=offset, limit=2) for offset in (0, 2)]
        orders.append([m["subject"] for p in pages for m in p["messages"]])
    assert orders[0] == orders[1] == ["tie 2", "tie 1", "tie 0", "older"]


async def test_a_long_run_of_equal_dates_pages_without_gaps(dovecot: Dovecot, limited_dovecot: Dovecot) -> None:
    """A run of 30 equal dates, read a few dates at a time from both ends of each page, pages alike."""
    expected = [f"tie {n}" for n in reversed(range(30))] + ["older"]
    for server in (dovecot, limited_dovecot):
        async with served(account_with_ties(server, ties=30).settings()) as client:
            pages = [await search(client, offset=offset, limit=7) for offset in range(0, 31, 7)]
            again = [await search(client, offset=offset, limit=7) for offset in range(0, 31, 7)]
        assert [m["subject"] for p in pages for m in p["messages"]] == expected
        for page in (*pages, *again):
            del page["fence"]  # new for every result
        assert again == pages  # the second time the dates come from the summary cache


async def test_search_values_with_imap_syntax_are_strings_here_too(limited_account: Account) -> None:
    client = limited_account.imap()
    try:
        for subject in ("Agenda (draft)", "Count {5} items", "Entwurf (Änderung)"):
            client.append("INBOX", f"Subject: {subject}\r\nFrom: s@example.com\r\n\r\nx\r\n".encode())
    finally:
        client.logout()
    async with served(limited_account) as mcp_client:
        found = [await search(mcp_client, subject=s) for s in ("(draft)", "{5}", "(Änderung)")]
    assert [[m["subject"] for m in page["messages"]] for page in found] == [
        ["Agenda (draft)"],
        ["Count {5} items"],
        ["Entwurf (Änderung)"],
    ]
