"""Roles in any language (issue 39 item 6): a Dovecot that marks no mailbox with SPECIAL-USE and does not offer it,
whose accounts' mailboxes are named in German or Russian (sent on the wire in modified UTF-7), and the settings that
name each role's mailbox (`IMAP_MAILBOX_*`, in the environment and per account), which win over SPECIAL-USE and
names; `get_server_info` says where each role came from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from harness import Account, Person, error_text, new_account, served, start_dovecot, structured
from imapclient.imap_utf7 import encode

from imap_mcp.server.accounts.loading import load_from_file
from imap_mcp.server.config import Settings, load_settings
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap.role_names import NamedRole
from imap_mcp.server.setting_values import ConfigError

pytestmark = pytest.mark.anyio

GERMAN = {"sent": "Gesendet", "drafts": "Entwürfe", "trash": "Papierkorb", "junk": "Spam", "archive": "Archiv"}
RUSSIAN = {"sent": "Отправленные", "drafts": "Черновики", "trash": "Корзина", "junk": "Спам", "archive": "Архив"}
MESSAGE = b"From: a@example.org\r\nTo: b@example.org\r\nSubject: hello\r\nMessage-ID: <m1@example.org>\r\n\r\nhi\r\n"


@pytest.fixture(scope="module")
def plain_dovecot() -> Iterator[Dovecot]:
    """A Dovecot without SPECIAL-USE: no mailbox marked, none created, the capability not offered."""
    instance = start_dovecot(special_use=False)
    try:
        yield instance
    finally:
        instance.stop()


def account_with(dovecot: Dovecot, *names: str) -> Account:
    """A new account of `dovecot` with these mailboxes and one message in INBOX."""
    account = new_account(dovecot)
    client = account.imap()
    try:
        for name in names:
            client.create_folder(name)
        client.append("INBOX", MESSAGE)
    finally:
        client.logout()
    return account


def with_roles(account: Account, **roles: str) -> Settings:
    """The account's settings with IMAP_MAILBOX_<ROLE> set for each of `roles`."""
    settings = account.settings()
    named = cast("tuple[tuple[NamedRole, str], ...]", tuple(roles.items()))
    return dataclasses.replace(settings, imap=dataclasses.replace(settings.imap, roles=named))


async def roles_of(settings: Settings | Account) -> tuple[dict[str, Any], dict[str, Any]]:
    """list_mailboxes' mailboxes by name, and get_server_info's `imap`."""
    async with served(settings) as client:
        listed = structured(await client.call_tool("list_mailboxes", {}))
        info = structured(await client.call_tool("get_server_info", {}))
    return {m["name"]: m for m in listed["mailboxes"]}, info["imap"]


def count(account: Account, mailbox: str) -> int:
    client = account.imap()
    try:
        return int(client.folder_status(mailbox, [b"MESSAGES"])[b"MESSAGES"])
    finally:
        client.logout()


@pytest.mark.parametrize("names", [GERMAN, RUSSIAN], ids=["de", "ru"])
async def test_mailboxes_named_in_the_users_language_get_their_roles(
    plain_dovecot: Dovecot, names: dict[str, str]
) -> None:
    account = account_with(plain_dovecot, *names.values(), "Projekte")
    raw = account.imap()
    raw.folder_encode = False  # the names as they travel: modified UTF-7
    on_the_wire = {name for _, _, name in raw.list_folders()}
    raw.logout()
    assert {encode(name) for name in names.values()} <= on_the_wire  # e.g. Entw&APw-rfe
    assert encode("Entwürfe") == b"Entw&APw-rfe"
    mailboxes, imap = await roles_of(account)
    assert "SPECIAL-USE" not in {c["name"] for c in imap["capabilities"] if c["present"]}
    for role, name in names.items():
        assert mailboxes[name]["role"] == role and mailboxes[name]["role_from"] == "name"
        assert imap["mailboxes_by_role"][role] == name and imap["roles_from"][role] == "name"
    assert mailboxes["Projekte"]["role"] == "none"
    verdicts = {(t["tool"], t["use"]): t["verdict"] for t in imap["tools"]}
    assert verdicts[("delete_messages", "permanent: false")] == "works"


async def test_a_delete_goes_to_the_papierkorb_and_no_one_is_told_to_create_a_trash(plain_dovecot: Dovecot) -> None:
    account = account_with(plain_dovecot, *GERMAN.values())
    person = Person()
    async with served(account, mode="legacy", elicitation_callback=person) as client:
        [found] = structured(await client.call_tool("search_messages", {}))["messages"]
        result = structured(await client.call_tool("delete_messages", {"ids": [found["id"]]}))
    assert result["status"] == "done" and result["destination"] == "Papierkorb"
    assert "Papierkorb" in person.shown[0] and count(account, "Papierkorb") == 1 and count(account, "INBOX") == 0


async def test_role_mailboxes_under_inbox_are_found_by_name(plain_dovecot: Dovecot) -> None:
    account = account_with(plain_dovecot, "INBOX/Gesendet", "INBOX/Papierkorb")
    mailboxes, _ = await roles_of(account)
    assert mailboxes["INBOX/Gesendet"]["role"] == "sent" and mailboxes["INBOX/Papierkorb"]["role"] == "trash"


async def test_without_a_known_name_the_advice_names_the_setting(plain_dovecot: Dovecot) -> None:
    """A trash in a language the table does not know: the advice says how to name it, besides creating one."""
    account = account_with(plain_dovecot, "Κάδος")
    async with served(account, mode="legacy", elicitation_callback=Person()) as client:
        [found] = structured(await client.call_tool("search_messages", {}))["messages"]
        refused = error_text(await client.call_tool("delete_messages", {"ids": [found["id"]]}))
    assert "set IMAP_MAILBOX_TRASH to that name" in refused and count(account, "INBOX") == 1
    named = with_roles(account, trash="Κάδος")
    async with served(named, mode="legacy", elicitation_callback=Person()) as client:
        assert structured(await client.call_tool("delete_messages", {"ids": [found["id"]]}))["destination"] == "Κάδος"
    assert count(account, "Κάδος") == 1


async def test_a_setting_wins_over_special_use(account: Account) -> None:
    """On the usual Dovecot, Trash is marked \\Trash; IMAP_MAILBOX_TRASH names Papierkorb, and it is the Trash."""
    client = account.imap()
    client.create_folder("Papierkorb")
    client.logout()
    mailboxes, imap = await roles_of(with_roles(account, trash="Papierkorb"))
    assert mailboxes["Papierkorb"]["role"] == "trash" and mailboxes["Papierkorb"]["role_from"] == "setting"
    assert mailboxes["Trash"]["role"] == "none"
    assert imap["roles_from"]["trash"] == "setting" and imap["role_settings"] == {"trash": "Papierkorb"}
    assert imap["roles_from"]["sent"] == "special-use"


async def test_a_setting_naming_no_mailbox_leaves_the_role_without_one_and_says_so(account: Account) -> None:
    inbox = count(account, "INBOX")
    async with served(with_roles(account, trash="Gelöscht"), mode="legacy", elicitation_callback=Person()) as client:
        found = structured(await client.call_tool("search_messages", {}))["messages"][0]
        refused = error_text(await client.call_tool("delete_messages", {"ids": [found["id"]]}))
        info = structured(await client.call_tool("get_server_info", {}))["imap"]
    assert "IMAP_MAILBOX_TRASH names 'Gelöscht', which this account has no mailbox of" in refused
    assert "trash" not in info["mailboxes_by_role"] and count(account, "INBOX") == inbox


def base_env() -> dict[str, str]:
    return {"IMAP_HOST": "imap.example.org", "IMAP_USERNAME": "u", "IMAP_PASSWORD": "p"}


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (
            {"IMAP_MAILBOX_TRASH": "Papier\nkorb"},
            "IMAP_MAILBOX_TRASH='Papier\\nkorb' is not valid: give a mailbox name",
        ),
        ({"IMAP_MAILBOX_SENT": "inbox"}, "IMAP_MAILBOX_SENT='inbox' is not valid: INBOX cannot be the sent mailbox"),
        (
            {"IMAP_MAILBOX_TRASH": "Papierkorb", "IMAP_MAILBOX_JUNK": "Papierkorb"},
            "IMAP_MAILBOX_JUNK='Papierkorb' is not valid: IMAP_MAILBOX_TRASH names the same mailbox",
        ),
    ],
)
def test_role_settings_that_cannot_be_used_are_refused_at_start(extra: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings({**base_env(), **extra})
    assert said in str(refused.value)


def test_role_settings_are_read_from_the_environment_and_per_account(tmp_path: Path) -> None:
    settings = load_settings({**base_env(), "IMAP_MAILBOX_SENT": "Gesendet", "IMAP_MAILBOX_ARCHIVE": " Archiv "})
    assert settings.imap.roles == (("sent", "Gesendet"), ("archive", "Archiv"))
    path = tmp_path / "accounts.toml"
    path.write_text(
        '[accounts.alice]\nIMAP_USERNAME = "alice"\nIMAP_MAILBOX_TRASH = "Корзина"\n'
        '[accounts.bob]\nIMAP_USERNAME = "bob"\n'
    )
    path.chmod(0o600)
    accounts = load_from_file(path, {**base_env(), "IMAP_MAILBOX_DRAFTS": "Entwürfe"})
    alice, bob = (accounts.named(name).settings.imap.roles for name in ("alice", "bob"))
    assert alice == (("drafts", "Entwürfe"), ("trash", "Корзина")) and bob == (("drafts", "Entwürfe"),)
