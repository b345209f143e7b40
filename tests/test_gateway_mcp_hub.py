"""imap-mcp behind mcp-hub (npm `mcp-hub`, pinned in tests/gateway/package.json), configured as a user would.

The hub spawns imap-mcp over stdio (entry `imap`: `.venv/bin/imap-mcp stdio`, the password from a
`${IMAP_PASSWORD}` placeholder) and connects to `imap-mcp serve` over Streamable HTTP (entry
`remote`: a `url` plus an `Authorization` header for `IMAP_MCP_AUTH_TOKENS`). The client is the MCP
SDK's, on the hub's one endpoint `/mcp` (HTTP+SSE), where tools are named `<entry>__<tool>`.
The hub's upstream client declares no capabilities, so guarded tools take the two-call token.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway.mcp_hub import Hub, hub_version, run_hub
from harness import Account, Person, error_text, http_server, message_ids, seeded_account, served, structured
from mcp import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from imap_mcp.server.demo.dovecot import Dovecot

#: one worker starts the hub, once (`--dist loadgroup`): spread over two, each would start one
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("mcp_hub")]

IMAP_MCP = Path(sys.executable).with_name("imap-mcp")  # the console script of the venv running the tests
ENTRIES = ("imap", "remote")  # stdio, Streamable HTTP
REMOTE_TOKEN = "hub-to-imap-mcp-token-5d1c9e0a"
#: the newest revision the hub's bundled MCP SDK speaks, up- and downstream
HUB_PROTOCOL_VERSION = "2025-06-18"
PINNED_HUB_VERSION = "4.2.1"


def imap_env(account: Account) -> dict[str, str]:
    """The IMAP_* settings as a user writes them into the hub config (the password as a placeholder)."""
    env = {k: v for k, v in account.env().items() if k.startswith("IMAP_")}
    env["IMAP_PASSWORD"] = "${IMAP_PASSWORD}"
    return env


@pytest.fixture(scope="module")
def account(dovecot: Dovecot) -> Account:
    """One account with the sample mail for this module: its tests share one hub (each asserts relative to
    what it found, so they run in any order and on either xdist worker)."""
    return seeded_account(dovecot)


@pytest.fixture(scope="module")
def hub(account: Account, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """mcp-hub with imap-mcp both ways: spawned over stdio, and `imap-mcp serve` behind a bearer token."""
    assert IMAP_MCP.exists(), IMAP_MCP
    tmp_path = tmp_path_factory.mktemp("mcp-hub")
    with http_server(account.env(IMAP_MCP_AUTH_TOKENS=REMOTE_TOKEN), log_path=tmp_path / "serve.log") as url:
        servers = {
            "imap": {"command": str(IMAP_MCP), "args": ["stdio"], "env": imap_env(account)},
            "remote": {"url": url, "headers": {"Authorization": "Bearer ${IMAP_MCP_TOKEN}"}},
        }
        secrets = {"IMAP_PASSWORD": account.password, "IMAP_MCP_TOKEN": REMOTE_TOKEN}
        with run_hub(servers, tmp_path, env=secrets) as running:
            yield running


@asynccontextmanager
async def hub_client(hub: Hub, person: Person | None = None) -> AsyncIterator[Client]:
    """The SDK client on the hub's endpoint; with `person`, it offers the hub a dialog (form elicitation)."""
    options: dict[str, Any] = {"elicitation_callback": person} if person else {}
    async with Client(sse_client(hub.mcp_url), mode="legacy", **options) as client:
        yield client


def assert_sample_mailboxes(content: dict[str, Any]) -> None:
    mailboxes = {m["name"]: m for m in content["mailboxes"]}
    assert content["mailboxes"][0]["name"] == "INBOX"
    for name, role in {"INBOX": "inbox", "Sent": "sent", "Archive": "archive", "Projects/Entwürfe": "none"}.items():
        assert mailboxes[name]["role"] == role, name
        assert mailboxes[name]["selectable"] is True, name


async def test_tools_reach_the_client_unchanged_but_for_the_entry_prefix(account: Account, hub: Hub) -> None:
    async with served(account, mode="legacy") as direct:
        own = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in (await direct.list_tools()).tools}
    async with hub_client(hub) as client:
        assert client.protocol_version == HUB_PROTOCOL_VERSION  # we offered 2025-11-25; the hub speaks 2025-06-18
        listed = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools}
    assert set(listed) == {f"{entry}__{name}" for entry in ENTRIES for name in own}
    for entry in ENTRIES:
        for name, tool in own.items():
            # title, description, annotations, inputSchema and outputSchema all survive
            assert listed[f"{entry}__{name}"] == {**tool, "name": f"{entry}__{name}"}, name
    assert {"delete_messages", "move_messages", "list_mailboxes"} <= set(own)


@pytest.mark.parametrize("entry", ENTRIES)
async def test_list_mailboxes_through_the_hub(hub: Hub, entry: str) -> None:
    async with hub_client(hub) as client:
        result = await client.call_tool(f"{entry}__list_mailboxes", {})
    content = structured(result)
    assert_sample_mailboxes(content)
    assert json.loads(result.content[0].text) == content  # type: ignore[union-attr]


async def test_list_mailboxes_through_the_rest_api(hub: Hub) -> None:
    """`POST /api/servers/tools` (what mcphub.nvim uses) returns the result with its structured content."""
    for entry in ENTRIES:
        response = hub.api("POST", "/servers/tools", {"server_name": entry, "tool": "list_mailboxes", "arguments": {}})
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert result["isError"] is False
        assert_sample_mailboxes(result["structuredContent"])
    health = hub.api("GET", "/health").json()
    assert health["version"] == hub_version() == PINNED_HUB_VERSION
    # mcp-hub labels every `url` entry "sse" but tries Streamable HTTP first, and only logs when it falls back
    assert {s["name"]: s["transportType"] for s in health["servers"]} == {"imap": "stdio", "remote": "sse"}
    assert "Falling back to SSE transport" not in hub.log_path.read_text()


async def test_delete_messages_takes_the_token_path_through_the_hub(account: Account, hub: Hub) -> None:
    """First call: a confirm_token, nothing changed. Same call plus the token: done. Both entries.

    The client offers a dialog, but the hub does not pass elicitation on, so nobody is asked.
    """
    inbox = message_ids(account, "INBOX")
    trash = message_ids(account, "Trash")
    person = Person()
    async with hub_client(hub, person) as client:
        for entry, victim in zip(ENTRIES, inbox, strict=False):
            args = {"ids": [victim]}
            first = await client.call_tool(f"{entry}__delete_messages", args)
            pending = structured(first)
            assert pending["status"] == "confirmation_required" and pending["count"] == len(pending["ids"]), entry
            token = pending["confirm_token"]
            assert token and token in first.content[0].text, entry  # type: ignore[union-attr]
            assert victim in message_ids(account, "INBOX"), entry  # the first call changed nothing

            done = structured(await client.call_tool(f"{entry}__delete_messages", {**args, "confirm_token": token}))
            assert done["status"] == "done" and done["approved_by"] == "token" and done["ids"] == [victim], entry
            assert victim not in message_ids(account, "INBOX"), entry
            assert set(done["new_ids"]) <= set(message_ids(account, "Trash")), entry
    assert person.shown == []
    assert message_ids(account, "INBOX") == inbox[2:]
    assert len(message_ids(account, "Trash")) == len(trash) + 2


async def test_tool_errors_pass_through_and_an_unknown_tool_is_the_hubs_own_error(account: Account, hub: Hub) -> None:
    bad_calls: list[tuple[str, dict[str, Any]]] = [
        ("list_mailboxes", {"counts": "not-a-boolean"}),
        ("delete_messages", {"ids": ["not-a-message-id"]}),
    ]
    async with served(account, mode="legacy") as direct:
        expected = [error_text(await direct.call_tool(tool, args)) for tool, args in bad_calls]
    async with hub_client(hub) as client:
        for entry in ENTRIES:
            for (tool, args), text in zip(bad_calls, expected, strict=True):
                assert error_text(await client.call_tool(f"{entry}__{tool}", args)) == text, (entry, tool)
        # a name the hub does not know never reaches imap-mcp: mcp-hub 4.2.1 answers with an internal
        # error from its own code (a ReferenceError in its "capability not found" message)
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("imap__no_such_tool", {})
    assert unknown.value.code == -32603


async def test_the_hub_initializes_imap_mcp_with_2025_06_18_and_no_capabilities(
    account: Account, tmp_path: Path
) -> None:
    """What the hub sends imap-mcp, read off the stdio pipe: the version, no elicitation, bare tool calls."""
    wire = tmp_path / "to-imap-mcp.jsonl"
    recorded = {
        "command": "/bin/sh",
        "args": ["-c", 'tee "$0" | exec "$1" stdio', str(wire), str(IMAP_MCP)],
        "env": imap_env(account),
    }
    with run_hub({"imap": recorded}, tmp_path, env={"IMAP_PASSWORD": account.password}) as hub:
        async with hub_client(hub) as client:
            structured(await client.call_tool("imap__list_mailboxes", {}))
    sent = [json.loads(line) for line in wire.read_text().splitlines()]
    initialize = next(m for m in sent if m.get("method") == "initialize")
    assert initialize["params"]["protocolVersion"] == HUB_PROTOCOL_VERSION
    assert initialize["params"]["capabilities"] == {}  # no elicitation, sampling or roots
    assert initialize["params"]["clientInfo"]["name"] == "mcp-hub"
    call = next(m for m in sent if m.get("method") == "tools/call")
    assert call["params"] == {"name": "list_mailboxes", "arguments": {}}  # no _meta: no progress token


async def test_the_hub_endpoint_is_http_sse_only(hub: Hub) -> None:
    """A Streamable HTTP (or 2026-07-28) client cannot use the hub: `POST /mcp` is not served."""
    response = httpx.post(
        hub.mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert response.status_code == 404
