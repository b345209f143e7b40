"""What differs between real IMAP servers, shown on each server of the matrix (Dovecot, Cyrus, Courier).

Roles without SPECIAL-USE (XLIST, then the usual names after the personal namespace), new names
in the server's namespace, one newest-first order with and without SORT, and Cyrus refusing to
delete a mailbox re-created within the same second.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from harness import Account, Person, error_text, guarded_client, new_account, served, structured
from imapclient import IMAPClient

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.imap.connection import connect
from imap_mcp.server.imap.pool import ImapPool

pytestmark = pytest.mark.anyio


#: LIST attributes about the hierarchy (RFC 3501, 3348), which every server sends; the rest are roles
STRUCTURAL = {b"\\noselect", b"\\haschildren", b"\\hasnochildren", b"\\noinferiors", b"\\marked", b"\\unmarked"}


def pool_seeing(
    account: Account, hidden: tuple[str, ...] = (), plain_list: bool = False, unlisted: tuple[str, ...] = ()
) -> ImapPool:
    """A pool whose connections are not told the `hidden` capabilities; with `plain_list`, LIST carries
    no role attributes (as from a server without SPECIAL-USE) and leaves out the `unlisted` mailboxes."""

    def connector(settings: ImapSettings) -> IMAPClient:
        client = connect(settings)
        client._cached_capabilities = tuple(c for c in client.capabilities() if c.decode().upper() not in hidden)
        if plain_list:
            listed = client.list_folders

            def without_roles(*args: Any, **kwargs: Any) -> list[Any]:
                return [
                    (tuple(f for f in flags if f.lower() in STRUCTURAL), delimiter, name)
                    for flags, delimiter, name in listed(*args, **kwargs)
                    if name not in unlisted
                ]

            client.list_folders = without_roles  # type: ignore[method-assign]
        return client

    return ImapPool(account.imap_settings(), connector=connector)


async def roles(account: Account, pool: ImapPool | None = None) -> dict[str, str]:
    async with served(account, pool=pool) as client:
        listed = structured(await client.call_tool("list_mailboxes", {}))["mailboxes"]
    return {m["name"]: m["role"] for m in listed if m["role"] != "none"}


async def test_every_server_names_the_usual_roles(empty_account: Account) -> None:
    account = empty_account
    expected = {"INBOX": "inbox"} | {
        account.mailbox(n): n.lower() for n in ("Sent", "Drafts", "Trash", "Junk", "Archive")
    }
    assert await roles(account) == expected


@pytest.mark.parametrize(
    "renamed",
    [
        {"Sent": "Sent Items", "Trash": "Deleted Items", "Junk": "Junk E-mail", "Archive": "Archives"},
        {"Sent": "Sent Messages", "Trash": "Deleted Messages", "Junk": "Spam"},
        {"Sent": "sent mail", "Trash": "BIN"},
    ],
    ids=["outlook", "apple", "lower-and-upper-case"],
)
async def test_without_special_use_the_providers_names_give_the_roles(
    empty_account: Account, renamed: dict[str, str]
) -> None:
    """LIST without SPECIAL-USE attributes, as Courier answers: the names decide, after the personal prefix.

    The server's own Sent, Trash... stay but are not listed, as on an account with only the provider's names.
    """
    account = empty_account
    direct = account.imap()
    for new in renamed.values():
        direct.create_folder(account.mailbox(new))
    direct.logout()
    unlisted = tuple(account.mailbox(old) for old in renamed)
    found = await roles(account, pool_seeing(account, ("SPECIAL-USE", "XLIST"), plain_list=True, unlisted=unlisted))
    for old, new in renamed.items():
        assert found[account.mailbox(new)] == old.lower(), new


@pytest.mark.servers("dovecot", "cyrus", reason="Courier marks no mailbox with an attribute")
async def test_a_role_from_an_attribute_outranks_a_usual_name(empty_account: Account) -> None:
    """A mailbox merely named Spam is not the Junk mailbox where another one is marked \\Junk."""
    account = empty_account
    direct = account.imap()
    direct.create_folder(account.mailbox("Spam"))
    direct.logout()
    found = await roles(account)
    assert found[account.mailbox("Junk")] == "junk" and account.mailbox("Spam") not in found


@pytest.mark.servers("cyrus", reason="of the three, only Cyrus offers XLIST")
async def test_xlist_gives_the_roles_where_special_use_is_not_offered(mail_server: object) -> None:
    """Cyrus offers XLIST: with SPECIAL-USE hidden and LIST plain, XLIST's \\Sent finds a Sent of any name."""
    account = new_account(mail_server)  # type: ignore[arg-type]
    direct = account.imap()
    direct.rename_folder("Sent", "Versendet")
    direct.logout()
    found = await roles(account, pool_seeing(account, hidden=("SPECIAL-USE",), plain_list=True))
    assert found["Versendet"] == "sent"


@pytest.mark.servers("courier", reason="Dovecot's and Cyrus's personal namespaces take every name")
async def test_a_new_name_outside_the_namespaces_is_refused_saying_what_the_server_expects(
    empty_account: Account,
) -> None:
    account = empty_account
    async with guarded_client(account) as client:
        create = await client.call_tool("manage_mailbox", {"action": "create", "mailbox": "Receipts/2026"})
        rename = await client.call_tool(
            "manage_mailbox", {"action": "rename", "mailbox": "INBOX.Archive", "new_name": "Old"}
        )
    for result in (create, rename):
        text = error_text(result)
        assert "under 'INBOX.' with '.' between levels" in text and "Nothing was changed" in text
    assert "use 'INBOX.Receipts.2026' instead" in error_text(create)
    direct = account.imap()
    assert {name for _, _, name in direct.list_folders()} >= {"INBOX.Archive"}
    assert not any("Receipts" in name or name == "Old" for _, _, name in direct.list_folders())
    direct.logout()


async def test_the_advice_to_create_a_missing_mailbox_names_it_the_servers_way(empty_account: Account) -> None:
    account = empty_account
    pool = pool_seeing(account, ("SPECIAL-USE", "XLIST"), plain_list=True, unlisted=(account.mailbox("Drafts"),))
    async with served(account, pool=pool) as client:
        result = await client.call_tool("save_draft", {"to": ["bob@example.net"], "subject": "x", "body": "y"})
    assert f"Create one named {account.mailbox('Drafts')!r} with manage_mailbox" in error_text(result)


def account_with_ties(server: object) -> Account:
    """Three messages received in the same second, then one received a day earlier but appended last."""
    account = new_account(server)  # type: ignore[arg-type]
    client = account.imap()
    tie = dt.datetime(2026, 10, 20, 8, tzinfo=dt.UTC)
    for n in range(3):
        client.append("INBOX", f"Subject: tie {n}\r\nFrom: tie@example.com\r\n\r\nx\r\n".encode(), msg_time=tie)
    client.append("INBOX", b"Subject: older\r\nFrom: tie@example.com\r\n\r\nx\r\n", msg_time=tie - dt.timedelta(days=1))
    client.logout()
    return account


@pytest.mark.parametrize("hidden", [(), ("SORT", "ESORT", "SORT=DISPLAY")], ids=["sort", "without-sort"])
async def test_equal_dates_come_newest_uid_first_on_every_page(mail_server: object, hidden: tuple[str, ...]) -> None:
    account = account_with_ties(mail_server)
    pool = pool_seeing(account, hidden=hidden)
    async with served(account, pool=pool) as client:
        pages = [structured(await client.call_tool("search_messages", {"offset": o, "limit": 2})) for o in (0, 2)]
    assert [m["subject"] for p in pages for m in p["messages"]] == ["tie 2", "tie 1", "tie 0", "older"]
    assert [p["total"] for p in pages] == [4, 4]


async def test_a_mailbox_deleted_created_and_deleted_again_within_a_second_is_gone(empty_account: Account) -> None:
    """Cyrus refuses the second DELETE within the same second ('already exists'); imap-mcp retries it once."""
    account = empty_account
    name = account.mailbox("Flash")
    async with guarded_client(account, Person()) as client:
        for _ in range(2):
            structured(await client.call_tool("manage_mailbox", {"action": "create", "mailbox": name}))
            deleted = structured(await client.call_tool("manage_mailbox", {"action": "delete", "mailbox": name}))
            assert deleted["status"] == "done"
    direct = account.imap()
    assert name not in {n for _, _, n in direct.list_folders()}
    direct.logout()
