"""Attachments as MCP resources: the template offered, get_message's URIs and links, resources/read in both eras,
over stdio and HTTP, on this account only, within the bound, never marking the message read."""

from __future__ import annotations

import base64
import os
from dataclasses import replace
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from harness import (
    ALICE_TOKEN,
    BOB_TOKEN,
    MODES,
    Account,
    accounts_env,
    append_message,
    client_as,
    http_server,
    new_account,
    served,
    stdio_params,
    structured,
)
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp.types import ResourceLink

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.config import DEFAULT_MAX_ATTACHMENT_BYTES, load_settings
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap.message_ids import MessageRef, decode_id
from imap_mcp.server.reading.resources import TEMPLATE, InvalidPartUri, authority, parse_part_uri, part_uri
from imap_mcp.server.setting_values import ConfigError

pytestmark = pytest.mark.anyio

INVOICE = b"%PDF-1.4\n% sample invoice\n"
OVERVIEW = "\u00dcbersicht der Kosten\n".encode()
NOT_FOUND = -32602


def mail_with(*files: tuple[str, bytes]) -> bytes:
    message = EmailMessage()
    message["From"] = "carol@example.com"
    message["To"] = "demo@example.org"
    message["Subject"] = "Files"
    message.set_content("see attached\n")
    for name, data in files:
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return message.as_bytes()


def ref_of(account: Account, uid: int, mailbox: str = "INBOX") -> MessageRef:
    client = account.imap()
    try:
        return MessageRef(mailbox, int(client.select_folder(mailbox, readonly=True)[b"UIDVALIDITY"]), uid)
    finally:
        client.logout()


def flags_of(account: Account, uid: int) -> tuple[bytes, ...]:
    """The flags of `uid` in INBOX, as another mail client sees them."""
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        return tuple(client.get_flags([uid])[uid])
    finally:
        client.logout()


async def invoice_id(client: Client) -> str:
    page = structured(await client.call_tool("search_messages", {"subject": "Invoice and overview"}))
    return str(page["messages"][0]["id"])


async def read_error(client: Client, uri: str) -> Any:
    """The JSON-RPC error resources/read of `uri` gets (it must get one)."""
    try:
        await client.read_resource(uri)
    except MCPError as refused:
        return refused.error
    pytest.fail(f"{uri} was read, not refused")


@pytest.mark.matrix
@pytest.mark.parametrize("mode", MODES)
async def test_get_message_links_each_attachment_and_resources_read_returns_it(account: Account, mode: str) -> None:
    async with served(account, mode=mode) as client:
        templates = (await client.list_resource_templates()).resource_templates
        listed = (await client.list_resources()).resources
        message_id = await invoice_id(client)
        result = await client.call_tool("get_message", {"id": message_id})
        links = [block for block in result.content if isinstance(block, ResourceLink)]
        read = [await client.read_resource(str(link.uri)) for link in links]
    attachments = structured(result)["attachments"]
    assert [t.uri_template for t in templates] == [TEMPLATE] and templates[0].mime_type is None
    assert listed == []  # mail is not enumerable: the URIs come from get_message
    assert [str(link.uri) for link in links] == [a["uri"] for a in attachments]
    assert [(link.mime_type, link.size) for link in links] == [(a["type"], a["size"]) for a in attachments]
    contents = [r.contents[0] for r in read]
    assert [base64.b64decode(c.blob) for c in contents] == [INVOICE, OVERVIEW]  # type: ignore[union-attr]
    assert [c.mime_type for c in contents] == ["application/pdf", "text/plain"]
    assert [c.meta for c in contents] == [{"size": len(INVOICE)}, {"size": len(OVERVIEW)}]
    assert [str(c.uri) for c in contents] == [a["uri"] for a in attachments]
    ref = decode_id(message_id)
    assert UriTemplate.parse(TEMPLATE).match(attachments[0]["uri"]) == {
        "account": account.imap_settings().account,  # the host part names the account: login@host:port
        "mailbox": ref.mailbox,
        "uidvalidity": str(ref.uidvalidity),
        "uid": str(ref.uid),
        "section": "2",
    }


@pytest.mark.matrix
async def test_reading_every_part_leaves_the_message_unread(account: Account) -> None:
    uid = append_message(account, mail_with(("a.bin", b"first"), ("b.bin", os.urandom(3000))))
    message_id = ref_of(account, uid).id
    async with served(account, mode="2026-07-28") as client:
        content = structured(await client.call_tool("get_message", {"id": message_id}))
        for attachment in content["attachments"]:
            await client.read_resource(attachment["uri"])
        structured(await client.call_tool("get_attachments", {"id": message_id}))
    assert b"\\Seen" not in flags_of(account, uid)


@pytest.mark.matrix
async def test_a_part_over_the_operators_bound_is_refused_saying_how_to_get_it(account: Account) -> None:
    bound = 4096
    uid = append_message(account, mail_with(("small.bin", b"tiny"), ("big.bin", os.urandom(2 * bound))))
    async with served(replace(account.settings(), max_attachment_bytes=bound), mode="2026-07-28") as client:
        result = await client.call_tool("get_message", {"id": ref_of(account, uid).id})
        small, big = structured(result)["attachments"]
        error = await read_error(client, big["uri"])
        fitting = await client.read_resource(small["uri"])
        [template] = (await client.list_resource_templates()).resource_templates
        limits = structured(await client.call_tool("get_server_info", {}))["limits"]
    assert [str(b.uri) for b in result.content if isinstance(b, ResourceLink)] == [small["uri"]]
    assert error.code == NOT_FOUND and error.data == {"uri": big["uri"]}
    assert f"over the inline limit of {bound} bytes" in error.message
    assert "IMAP_MAX_ATTACHMENT_BYTES" in error.message and "IMAP_DOWNLOAD_DIR" in error.message
    assert base64.b64decode(fitting.contents[0].blob) == b"tiny"  # type: ignore[union-attr]
    assert f"At most {bound} bytes" in (template.description or "")
    assert limits["inline_attachment_bytes"] == bound


@pytest.mark.matrix
@pytest.mark.parametrize("mode", MODES)
async def test_a_uri_naming_nothing_here_is_not_found_saying_why(account: Account, mode: str) -> None:
    uid = append_message(account, mail_with(("gone.bin", b"soon deleted")))
    async with served(account, mode=mode) as client:
        message_id = await invoice_id(client)
        ref = decode_id(message_id)
        server = authority(account.imap_settings())
        gone = part_uri(server, ref_of(account, uid), "2")
        structured(await client.call_tool("get_message", {"id": ref_of(account, uid).id}))
        client_imap = account.imap()
        try:
            client_imap.select_folder("INBOX")
            client_imap.delete_messages([uid])
            client_imap.expunge()
        finally:
            client_imap.logout()
        elsewhere = f"other%40example.org@{server.rpartition('@')[2]}"
        cases = {
            "imap://nothing-like-it": "is not the URI of an attachment",
            part_uri(server, ref, "2").replace(";UID=", ";UID=0"): "another spelling",
            part_uri(server, ref, "2").replace("/INBOX;", "/inbox;"): "INBOX in another case",
            part_uri(server, ref, "9"): "are not attachments of this message",
            part_uri(server, ref, "1"): "are not attachments of this message",
            part_uri(server, MessageRef(ref.mailbox, ref.uidvalidity + 1, ref.uid), "2"): "stale",
            part_uri(server, MessageRef("Nowhere", ref.uidvalidity, ref.uid), "2"): "no longer exists",
            part_uri(elsewhere, ref, "2"): "another account",
            # Mailutils tells a session of no expunge made by another one: the pool sees it in the STATUS
            gone: "deleted or moved",
        }
        errors = {uri: await read_error(client, uri) for uri in cases}
    for uri, expected in cases.items():
        assert (errors[uri].code, errors[uri].data) == (NOT_FOUND, {"uri": uri})
        assert expected in errors[uri].message, (uri, errors[uri].message)


async def test_inbox_has_one_spelling_in_a_uri(account: Account) -> None:
    """A message named by `inbox` (the deprecated mailbox + uid) links its parts at INBOX, the one spelling a
    resources/read takes: IMAP names INBOX in any case, a URI in one."""
    uid = append_message(account, mail_with(("one.bin", b"one")))
    async with served(account, mode="2026-07-28") as client:
        result = await client.call_tool("get_message", {"mailbox": "inbox", "uid": uid})
        (link,) = [block for block in result.content if isinstance(block, ResourceLink)]
        read = await client.read_resource(str(link.uri))
        lower = await read_error(client, str(link.uri).replace("/INBOX;", "/inbox;"))
    assert str(link.uri) == part_uri(authority(account.imap_settings()), ref_of(account, uid), "2")
    assert base64.b64decode(read.contents[0].blob) == b"one"  # type: ignore[union-attr]
    assert (lower.code, lower.data) == (NOT_FOUND, {"uri": str(link.uri).replace("/INBOX;", "/inbox;")})
    assert "INBOX in another case" in lower.message
    with pytest.raises(InvalidPartUri, match="INBOX in another case"):
        parse_part_uri(str(link.uri).replace("/INBOX;", "/Inbox;"))


@pytest.mark.parametrize("mode", MODES)
async def test_a_part_is_read_over_stdio(account: Account, mode: str) -> None:
    async with Client(stdio_params(account.env()), mode=mode) as client:
        await read_the_invoice(client)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_part_is_read_over_http(account: Account, mode: str) -> None:
    with http_server(account.env()) as url:
        async with Client(url, mode=mode) as client:
            await read_the_invoice(client)


async def read_the_invoice(client: Client) -> None:
    content = structured(await client.call_tool("get_message", {"id": await invoice_id(client)}))
    templates = (await client.list_resource_templates()).resource_templates
    read = await client.read_resource(content["attachments"][0]["uri"])
    assert [t.uri_template for t in templates] == [TEMPLATE]
    assert base64.b64decode(read.contents[0].blob) == INVOICE  # type: ignore[union-attr]
    assert read.contents[0].mime_type == "application/pdf"


@pytest.mark.slow
async def test_over_http_a_token_reads_only_its_own_accounts_parts(dovecot: Dovecot, tmp_path: Path) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    alice_uid = append_message(alice, mail_with(("alice.bin", b"for alice only")))
    bob_uid = append_message(bob, mail_with(("bob.bin", b"for bob only")))
    with http_server(accounts_env(tmp_path, alice, bob)) as url:
        async with client_as(url, ALICE_TOKEN) as as_alice, client_as(url, BOB_TOKEN, mode="legacy") as as_bob:
            alice_content = structured(await as_alice.call_tool("get_message", {"id": ref_of(alice, alice_uid).id}))
            uri = alice_content["attachments"][0]["uri"]
            read_by_alice = await as_alice.read_resource(uri)
            refused = await read_error(as_bob, uri)
            # the same part of Bob's own message (their INBOXes' UIDVALIDITYs differ when made in different seconds)
            bobs_part = part_uri(authority(bob.imap_settings()), ref_of(bob, bob_uid), parse_part_uri(uri).section)
            read_by_bob = await as_bob.read_resource(bobs_part)
    assert base64.b64decode(read_by_alice.contents[0].blob) == b"for alice only"  # type: ignore[union-attr]
    assert refused.code == NOT_FOUND and "another account" in refused.message and refused.data == {"uri": uri}
    assert base64.b64decode(read_by_bob.contents[0].blob) == b"for bob only"  # type: ignore[union-attr]


async def test_without_get_attachments_no_part_is_served(account: Account) -> None:
    """An operator who withholds get_attachments withholds the bytes it would give, resources/read too."""
    env = account.env(IMAP_MCP_DISABLE_TOOLS="get_attachments")
    from imap_mcp.server.serving.accounts import account_server

    [only] = load_accounts(env).accounts
    async with Client(account_server(only), mode="2026-07-28") as client:
        templates = (await client.list_resource_templates()).resource_templates
        result = await client.call_tool("get_message", {"id": await invoice_id(client)})
        uri = part_uri(authority(account.imap_settings()), decode_id(structured(result)["id"]), "2")
        error = await read_error(client, uri)
    assert templates == [] and not [b for b in result.content if isinstance(b, ResourceLink)]
    assert [a["uri"] for a in structured(result)["attachments"]] == [None, None]
    assert error.code == NOT_FOUND


def test_allowing_executables_is_a_setting_of_each_account(tmp_path: Path, empty_account: Account) -> None:
    account = empty_account
    other = replace(account, username="someone-else")
    env = accounts_env(tmp_path, account, other, alice_extra='IMAP_ALLOW_EXECUTABLE_ATTACHMENTS = "true"')
    alice, bob = load_accounts(env).accounts
    assert alice.settings.allow_executable_attachments is True and bob.settings.allow_executable_attachments is False
    assert load_settings(account.env()).allow_executable_attachments is False
    with pytest.raises(ConfigError, match="IMAP_ALLOW_EXECUTABLE_ATTACHMENTS='yes' is not valid"):
        load_settings(account.env(IMAP_ALLOW_EXECUTABLE_ATTACHMENTS="yes"))


def test_the_bound_of_a_read_is_a_whole_number_of_bytes_within_limits(empty_account: Account) -> None:
    env = empty_account.env
    assert load_settings(env()).max_attachment_bytes == DEFAULT_MAX_ATTACHMENT_BYTES == 8 * 1024 * 1024
    assert load_settings(env(IMAP_MAX_ATTACHMENT_BYTES="1048576")).max_attachment_bytes == 1048576
    for wrong in ("1023", str(64 * 1024 * 1024 + 1), "8MB", "-5", "\u0661\u0662\u0663\u0664\u0665"):
        with pytest.raises(ConfigError, match=f"IMAP_MAX_ATTACHMENT_BYTES={wrong!r} is not valid: use a whole number"):
            load_settings(env(IMAP_MAX_ATTACHMENT_BYTES=wrong))
