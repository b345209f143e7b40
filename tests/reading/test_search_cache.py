"""The search-order cache only skips recomputing a result the unchanged mailbox would give again."""

from __future__ import annotations

from email.message import EmailMessage

import pytest
from harness import Account, append_message, served, structured
from imapclient import IMAPClient

from imap_mcp.server.imap.pool import examine
from imap_mcp.server.reading.search import SearchQuery, search_page
from imap_mcp.server.reading.search_cache import OrderCache

pytestmark = pytest.mark.anyio


def new_mail(subject: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = "zoe@example.com"
    msg["To"] = "demo@example.org"
    msg["Subject"] = subject
    msg.set_content("hello\n")
    return msg.as_bytes()


def page(client: IMAPClient, cache: OrderCache, **query: object) -> tuple[int, list[int]]:
    result = search_page(client, examine(client, "INBOX"), SearchQuery(**query), cache)  # type: ignore[arg-type]
    return result.total, [m.uid for m in result.messages]


@pytest.mark.servers("dovecot", "cyrus", reason="an order is kept only where CONDSTORE shows no flag changed")
def test_an_unchanged_mailbox_reuses_the_order(account: Account, client: IMAPClient) -> None:
    cache = OrderCache()
    first = page(client, cache)
    second = page(client, cache)
    assert second == first and cache.hits == 1


def test_new_mail_is_seen_at_once(account: Account, client: IMAPClient) -> None:
    cache = OrderCache()
    total, _ = page(client, cache)
    uid = append_message(account, new_mail("fresh"))
    total_after, uids = page(client, cache)
    assert total_after == total + 1 and uids[0] == uid
    assert cache.hits == 0


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


def test_an_expunge_by_another_client_is_seen(account: Account, client: IMAPClient) -> None:
    cache = OrderCache()
    total, uids = page(client, cache)
    other = account.imap()
    try:
        other.select_folder("INBOX")
        other.add_flags([uids[0]], [b"\\Deleted"])
        other.uid_expunge([uids[0]])
    finally:
        other.logout()
    total_after, uids_after = page(client, cache)
    assert total_after == total - 1 and uids[0] not in uids_after


async def test_the_tool_reflects_a_change_between_two_identical_searches(account: Account) -> None:
    async with served(account) as mcp_client:
        before = structured(await mcp_client.call_tool("search_messages", {}))
        append_message(account, new_mail("arrived between calls"))
        after = structured(await mcp_client.call_tool("search_messages", {}))
    assert after["total"] == before["total"] + 1
    assert after["messages"][0]["subject"] == "arrived between calls"
