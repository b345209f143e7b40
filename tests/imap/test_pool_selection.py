"""The pool keeps a mailbox examined between reads, but never trusts that memory over the server."""

from __future__ import annotations

import pytest
from harness import Account, served, structured

from imap_mcp.server.imap.pool import ImapPool

pytestmark = pytest.mark.anyio


async def test_a_warm_process_reads_without_logging_in_or_examining_again(account: Account) -> None:
    pool = ImapPool(account.imap_settings())
    async with served(account, pool=pool) as client:
        page = structured(await client.call_tool("search_messages", {}))
        for message in page["messages"]:
            structured(await client.call_tool("get_message", {"id": message["id"]}))
    # two connections: the first call reads the domains the account wrote to (Sent) on a second one, so that
    # INBOX stays examined on the first; every call after that reuses both
    assert (pool.opened, pool.examines) == (2, 1)
    pool.close_all()


async def test_another_operation_in_between_makes_the_pool_examine_again(account: Account) -> None:
    pool = ImapPool(account.imap_settings(), max_size=1)  # one connection: each call meets what the last left
    async with served(account, pool=pool) as client:
        structured(await client.call_tool("search_messages", {}))
        await pool.run(lambda imap: imap.select_folder("Archive"))  # e.g. a move tool selecting another mailbox
        page = structured(await client.call_tool("search_messages", {"limit": 1}))
    assert page["mailbox"] == "INBOX" and page["total"] == 9
    assert pool.examines == 2
    pool.close_all()


async def test_a_dropped_connection_is_replaced_and_the_mailbox_examined_afresh(account: Account) -> None:
    pool = ImapPool(account.imap_settings(), max_size=1)  # one connection: each call meets what the last left
    async with served(account, pool=pool) as client:
        structured(await client.call_tool("search_messages", {}))
        account.dovecot.doveadm("kick", account.username)
        page = structured(await client.call_tool("search_messages", {"limit": 2}))
    assert page["total"] == 9 and (pool.opened, pool.examines) == (2, 2)
    pool.close_all()


async def test_a_uidvalidity_change_while_examined_is_noticed(account: Account) -> None:
    """Dovecot drops a session whose examined mailbox was renumbered; the next read re-examines and sees it."""
    pool = ImapPool(account.imap_settings())
    async with served(account, pool=pool) as client:
        before = structured(await client.call_tool("search_messages", {"limit": 1}))["messages"][0]["id"]
        validity = int(before.split(".")[2])
        account.dovecot.doveadm(
            "mailbox", "update", "-u", account.username, "--uid-validity", str(validity + 1), "INBOX"
        )
        after = structured(await client.call_tool("search_messages", {"limit": 1}))["messages"][0]["id"]
    assert after == before.replace(f".{validity}.", f".{validity + 1}.")
    pool.close_all()
