"""What differs between real IMAP servers, shown on each server of the matrix (Dovecot, Cyrus, Courier,
Mailutils).

Roles without SPECIAL-USE (XLIST, then the usual names after the personal namespace), new names
in the server's namespace, one newest-first order with and without SORT, Cyrus refusing to
delete a mailbox re-created within the same second, messages after a gap in the UIDs (Mailutils
reads `UID SEARCH UID` sets as message numbers), and ids of mail no client has opened yet.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from harness import (
    Account,
    Person,
    append_message,
    error_text,
    guarded_client,
    message_ids,
    new_account,
    plain_mail,
    served,
    structured,
)
from imapclient import IMAPClient

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.imap.connection import connect
from imap_mcp.server.imap.message_ids import MessageRef, decode_id
from imap_mcp.server.imap.pool import ImapPool

pytestmark = [pytest.mark.anyio, pytest.mark.matrix]


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

            client.list_folders = without_roles
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
    tie = dt.datetime(2026, 10, 20, 8, tzinfo=dt.UTC)
    for n in range(3):
        append_message(account, f"Subject: tie {n}\r\nFrom: tie@example.com\r\n\r\nx\r\n".encode(), received=tie)
    older = b"Subject: older\r\nFrom: tie@example.com\r\n\r\nx\r\n"
    append_message(account, older, received=tie - dt.timedelta(days=1))
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


def expunge_second_message(account: Account) -> None:
    """Another mail client deletes the second INBOX message for good: a gap in the UIDs (1, 3, 4, ...)."""
    client = account.imap()
    try:
        client.select_folder("INBOX")
        client.add_flags([2], [b"\\Deleted"])
        client.expunge()  # the only message marked \Deleted (not UID EXPUNGE: Mailutils has no UIDPLUS)
    finally:
        client.logout()


async def test_messages_after_a_uid_gap_are_found_and_the_gap_is_gone(account: Account) -> None:
    """Which UIDs exist is asked with UID FETCH: Mailutils takes the set of `UID SEARCH UID` for message numbers
    (every message after a gap read as missing) and refuses a UID FETCH set naming a UID it does not hold."""
    expunge_second_message(account)
    ids = message_ids(account, "INBOX")
    gone = MessageRef("INBOX", decode_id(ids[0]).uidvalidity, 2).id
    async with served(account) as client:
        flagged = structured(await client.call_tool("set_message_flags", {"ids": ids[-2:], "add": ["\\Flagged"]}))
        read = structured(await client.call_tool("get_message", {"id": ids[-1]}))
        missing = error_text(await client.call_tool("get_message", {"id": gone}))
        both = structured(await client.call_tool("set_message_flags", {"ids": [gone, ids[-1]], "add": ["\\Seen"]}))
    assert len(ids) == 8 and flagged["ids"] == ids[-2:]
    assert read["headers"]["subject"] == "Urgent: account notice"
    assert "deleted or moved" in missing
    assert both["ids"] == [ids[-1]] and both["missing_ids"] == [gone]


async def test_ids_of_mail_no_client_has_opened_stay_valid(empty_account: Account) -> None:
    """Mail delivered into a mailbox nobody has opened read-write (Mailutils: Maildir `new/`, a new UIDVALIDITY
    and new UIDs at each look; Courier: the clock as UIDVALIDITY) is settled before its ids are made, whatever
    the server's greeting: the id a search gives still reads the message in another session."""
    account = empty_account
    direct = account.imap()
    try:
        direct.append("INBOX", plain_mail("delivered"))
    finally:
        direct.logout()
    async with served(account) as first:
        found = structured(await first.call_tool("search_messages", {}))["messages"]
    another = account.imap()
    try:
        another.folder_status("INBOX", [b"UIDNEXT"])  # another mail client looks (Mailutils: new UIDs, unless settled)
    finally:
        another.logout()
    async with served(account) as second:
        read = structured(await second.call_tool("get_message", {"id": found[0]["id"]}))
    assert read["headers"]["subject"] == "delivered"
