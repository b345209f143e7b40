"""Read-only and the tool lists over stdio and HTTP, globally and per account; get_server_info in both eras."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from harness import (
    ALICE_TOKEN,
    BOB_TOKEN,
    MODES,
    READ_TOOLS,
    Account,
    Person,
    accounts_env,
    client_as,
    http_server,
    new_account,
    stdio_params,
    structured,
    tool_names,
)
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from imap_mcp.server.config import Settings
from imap_mcp.server.demo.dovecot import Dovecot, free_port
from imap_mcp.server.serving.app import build_server
from imap_mcp.server.tools.policy import ToolPolicy

pytestmark = pytest.mark.anyio

EVERY_TOOL_WITHOUT_SMTP = sorted(
    [
        *READ_TOOLS,
        "delete_messages",
        "list_new_messages",
        "manage_mailbox",
        "move_messages",
        "save_draft",
        "set_message_flags",
        "set_webhook_enabled",
        "set_webhook_outbox_limits",
        "update_draft",
    ]
)


def stdio_account_params(env: dict[str, str], name: str) -> StdioServerParameters:
    params = stdio_params(env)
    return params.model_copy(update={"args": [*params.args, "--account", name]})


async def offered_and_refused(client: Client, refused_tool: str) -> tuple[list[str], MCPError]:
    with pytest.raises(MCPError) as refused:
        await client.call_tool(refused_tool, {"ids": ["x"]})
    return await tool_names(client), refused.value


@pytest.mark.slow
@pytest.mark.parametrize(
    ("policy", "offered", "refused_tool"),
    [
        ({"IMAP_MCP_READ_ONLY": "true"}, READ_TOOLS, "delete_messages"),
        (
            {"IMAP_MCP_TOOLS": "list_mailboxes,search_messages"},
            ["get_server_info", "list_mailboxes", "search_messages"],
            "get_message",
        ),
        (
            {"IMAP_MCP_DISABLE_TOOLS": "delete_messages,get_server_info"},
            [t for t in EVERY_TOOL_WITHOUT_SMTP if t not in ("delete_messages", "get_server_info")],
            "delete_messages",
        ),
    ],
)
async def test_the_environment_policy_over_stdio_and_http(
    empty_account: Account, policy: dict[str, str], offered: list[str], refused_tool: str
) -> None:
    env = empty_account.env(**policy, IMAP_MCP_AUTH_TOKENS=ALICE_TOKEN)
    async with Client(stdio_params(env), mode="legacy") as client:
        over_stdio, refused_stdio = await offered_and_refused(client, refused_tool)
    with http_server(env) as url:
        async with client_as(url, ALICE_TOKEN) as client:
            over_http, refused_http = await offered_and_refused(client, refused_tool)
    assert over_stdio == over_http == offered
    for refused in (refused_stdio, refused_http):
        assert refused.code == -32602 and f"Unknown tool: {refused_tool}" in refused.message


@pytest.mark.slow
async def test_the_account_policy_over_stdio_and_http(dovecot: Dovecot, tmp_path: Path) -> None:
    """The environment says read-only for everyone; bob's table says otherwise and disables manage_mailbox."""
    alice, bob = new_account(dovecot), new_account(dovecot)
    bob_table = 'IMAP_MCP_READ_ONLY = false\nIMAP_MCP_DISABLE_TOOLS = "manage_mailbox"'
    env = {**accounts_env(tmp_path, alice, bob, bob_extra=bob_table), "IMAP_MCP_READ_ONLY": "true"}
    bob_tools = [t for t in EVERY_TOOL_WITHOUT_SMTP if t != "manage_mailbox"]
    async with Client(stdio_account_params(env, "alice"), mode="2026-07-28") as client:
        alice_stdio = await tool_names(client)
    async with Client(stdio_account_params(env, "bob"), mode="legacy") as client:
        bob_stdio, refused = await offered_and_refused(client, "manage_mailbox")
        info = structured(await client.call_tool("get_server_info", {}))
    with http_server(env) as url:
        async with client_as(url, ALICE_TOKEN) as as_alice, client_as(url, BOB_TOKEN) as as_bob:
            alice_http, bob_http = await tool_names(as_alice), await tool_names(as_bob)
    assert alice_stdio == alice_http == READ_TOOLS
    assert bob_stdio == bob_http == bob_tools
    assert refused.code == -32602
    assert info["account"]["login"] == bob.username
    assert {"name": "manage_mailbox", "reason": "named in IMAP_MCP_DISABLE_TOOLS"} in info["tools"]["not_offered"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dialog", [True, False])
async def test_get_server_info_in_both_eras(empty_account: Account, mode: str, dialog: bool) -> None:
    options: dict[str, Any] = {"elicitation_callback": Person()} if dialog else {}
    async with Client(build_server(empty_account.settings()), mode=mode, **options) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("get_server_info", {})
    info = structured(result)
    schema = listed["get_server_info"].output_schema
    assert schema is not None and set(schema["required"]) >= {"account", "imap", "tools", "approvals", "limits"}
    assert listed["get_server_info"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert info["name"] == "imap-mcp" and info["version"]
    assert {"2025-11-25", "2026-07-28"} <= set(info["protocol_versions"])
    assert info["this_request_version"] == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert info["account"] == {
        "name": "default",
        "login": empty_account.username,
        "host": "127.0.0.1",
        "port": empty_account.dovecot.tls_port,
        "tls": "implicit",
        "sends_from": None,
    }
    capabilities = {c["name"]: c["present"] for c in info["imap"]["capabilities"]}
    assert info["imap"]["reachable"] is True and capabilities["MOVE"] is True and capabilities["UIDPLUS"] is True
    assert capabilities["QRESYNC"] is True  # Dovecot offers it; the order cache uses its VANISHED
    assert {"inbox": "INBOX", "sent": "Sent", "trash": "Trash", "drafts": "Drafts"}.items() <= info["imap"][
        "mailboxes_by_role"
    ].items()
    assert info["tools"]["offered"] == EVERY_TOOL_WITHOUT_SMTP
    assert info["tools"]["not_offered"] == [
        {"name": name, "reason": "SMTP_HOST is not set"}
        for name in ("forward_message", "reply_to_message", "send_draft", "send_message")
    ]
    approvals = info["approvals"]
    expected_channel = ("push" if mode == "legacy" else "dialog") if dialog else "token"
    assert (approvals["elicitation"], approvals["this_request"]) == (True, expected_channel)
    assert approvals["dialog_possible"] is dialog and "confirm_token" in approvals["token_fallback"]
    assert info["limits"] == {
        "search_page_default": 20,
        "search_page_max": 100,
        "max_chars_default": 20_000,
        "max_chars_max": 200_000,
        "inline_attachment_bytes": 8 * 1024 * 1024,
        "attachments": "inline",
    }
    assert empty_account.password not in json.dumps(info) + str(result.content)


async def test_read_only_withholds_downloads_and_says_why(empty_account: Account, tmp_path: Path) -> None:
    settings = Settings(imap=empty_account.imap_settings(), download_dir=tmp_path)
    server = build_server(settings, name="ro", policy=ToolPolicy(read_only=True))
    async with Client(server, mode="2026-07-28") as client:
        names = await tool_names(client)
        info = structured(await client.call_tool("get_server_info", {}))
    assert names == [t for t in READ_TOOLS if t != "get_attachments"]
    reasons = {item["name"]: item["reason"] for item in info["tools"]["not_offered"]}
    assert reasons["get_attachments"].startswith("IMAP_MCP_READ_ONLY=true")
    assert info["account"]["name"] == "ro" and info["limits"]["attachments"] == "files"


async def test_get_server_info_answers_when_the_imap_server_does_not(empty_account: Account) -> None:
    unreachable = Settings(imap=dataclasses.replace(empty_account.imap_settings(), port=free_port()))
    async with Client(build_server(unreachable), mode="2026-07-28") as client:
        info = structured(await client.call_tool("get_server_info", {}))
    assert info["imap"]["reachable"] is False and "Cannot reach the IMAP server" in info["imap"]["problem"]
    assert info["imap"]["capabilities"] == [] and info["tools"]["offered"] == EVERY_TOOL_WITHOUT_SMTP
