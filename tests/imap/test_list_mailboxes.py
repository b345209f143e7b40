"""list_mailboxes through the SDK client: both eras by stdio and HTTP, TLS and STARTTLS."""

from __future__ import annotations

from typing import Any

import pytest
from harness import MODES, Account, error_text, http_server, served, stdio_params
from mcp import Client

pytestmark = pytest.mark.anyio

EXPECTED_ROLES = {
    "INBOX": "inbox",
    "Sent": "sent",
    "Drafts": "drafts",
    "Trash": "trash",
    "Junk": "junk",
    "Archive": "archive",
    "Projects": "none",
    "Projects/Entwürfe": "none",
    "Public/Team": "none",
}


def by_name(result: Any) -> dict[str, dict[str, Any]]:
    assert not result.is_error, result.content
    return {m["name"]: m for m in result.structured_content["mailboxes"]}


def assert_sample_mailboxes(account: Account, mailboxes: dict[str, dict[str, Any]]) -> None:
    """The sample's mailboxes with their roles; the public namespace is the session Dovecot's only."""
    for name, role in EXPECTED_ROLES.items():
        if name.startswith("Public/") and account.server_name != "dovecot":
            continue
        listed = mailboxes[name if name.startswith("Public/") else account.mailbox(name)]
        assert listed["role"] == role, name
        assert listed["selectable"] is True, name
        flat_inbox = name == "INBOX" and account.server_name == "mailutils"  # its LIST names INBOX with NIL
        assert listed["delimiter"] == (None if flat_inbox else account.delimiter), name
    if account.server_name == "dovecot":
        assert mailboxes["Public"]["selectable"] is False  # a pure folder (\Noselect)
    assert next(iter(mailboxes)) == "INBOX"


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_over_stdio(account: Account, mode: str) -> None:
    async with Client(stdio_params(account.env()), mode=mode) as client:
        expected_version = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert client.protocol_version == expected_version
        assert_sample_mailboxes(account, by_name(await client.call_tool("list_mailboxes", {})))


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_over_http(account: Account, mode: str) -> None:
    with http_server(account.env()) as url:
        async with Client(url, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            assert_sample_mailboxes(account, by_name(await client.call_tool("list_mailboxes", {})))


@pytest.mark.matrix
@pytest.mark.parametrize("tls", ["implicit", "starttls"])
async def test_over_tls_and_starttls(account: Account, tls: str) -> None:
    async with served(account.settings(tls), mode="2026-07-28") as client:  # type: ignore[arg-type]
        assert_sample_mailboxes(account, by_name(await client.call_tool("list_mailboxes", {})))


async def test_annotations_and_title(account: Account) -> None:
    async with served(account) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "list_mailboxes")
    assert tool.title == "List mailboxes"
    wire = tool.annotations.model_dump(by_alias=True, exclude_none=True)  # type: ignore[union-attr]
    assert wire == {
        "title": "List mailboxes",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    }


@pytest.mark.slow
@pytest.mark.matrix
async def test_bad_password_is_a_clean_tool_error(account: Account) -> None:
    account.password = "wrong-secret-Zq9"
    with http_server(account.env()) as url:
        async with Client(url, mode="2026-07-28") as client:
            result = await client.call_tool("list_mailboxes", {})
    text = error_text(result)
    assert "refused the login" in text and "IMAP_PASSWORD" in text
    assert "wrong-secret-Zq9" not in text


async def test_unreachable_server_is_a_clean_tool_error(account: Account) -> None:
    settings = account.settings()
    from dataclasses import replace

    from imap_mcp.server.demo.dovecot import free_port

    dead = replace(settings, imap=replace(settings.imap, port=free_port()))
    async with served(dead) as client:
        result = await client.call_tool("list_mailboxes", {})
    assert "Cannot reach the IMAP server" in error_text(result)


async def test_a_warm_process_reuses_its_connection(account: Account) -> None:
    from imap_mcp.server.imap.pool import ImapPool

    pool = ImapPool(account.imap_settings())
    async with served(account, pool=pool) as client:
        for _ in range(3):
            by_name(await client.call_tool("list_mailboxes", {}))
    assert pool.opened == 1
    pool.close_all()


@pytest.mark.matrix
async def test_counts_come_only_when_asked(account: Account) -> None:
    async with served(account) as client:
        plain = by_name(await client.call_tool("list_mailboxes", {}))
        counted = by_name(await client.call_tool("list_mailboxes", {"counts": True}))
    assert plain["INBOX"]["messages"] is None and plain["INBOX"]["unread"] is None
    assert (counted["INBOX"]["messages"], counted["INBOX"]["unread"]) == (9, 6)
    projects, trash = counted[account.mailbox("Projects/Entwürfe")], counted[account.mailbox("Trash")]
    assert (projects["messages"], projects["unread"]) == (1, 0)
    assert (trash["messages"], trash["unread"]) == (0, 0)
    if account.server_name == "dovecot":
        assert counted["Public"]["messages"] is None  # a pure folder has no messages to count
