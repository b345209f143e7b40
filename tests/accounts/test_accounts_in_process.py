"""Account routing and the accounts reload in this process: the fast lane's guard of two promises that
`test_accounts_serving` and `test_accounts_reload` (marked slow: they start `imap-mcp serve`) show end to end.

The app is the one `imap-mcp serve` runs with an accounts file (`accounts_http_app`), driven over ASGI with its
lifespan running; its mailboxes are real Dovecot users.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from harness import ALICE_TOKEN, BOB_TOKEN, accounts_env, new_account
from starlette.types import ASGIApp, Message

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.serving import account_routing as routing
from imap_mcp.server.serving.accounts import accounts_http_app

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"


@contextlib.asynccontextmanager
async def serving(env: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    """The accounts app of `env`, its lifespan started (and ended after), and a client of it."""
    app = accounts_http_app(load_accounts(env), env)
    to_app, from_test = anyio.create_memory_object_stream[Message](4)
    started, stopped = anyio.Event(), anyio.Event()

    async def send(message: Message) -> None:
        {"lifespan.startup.complete": started, "lifespan.shutdown.complete": stopped}[message["type"]].set()

    async with anyio.create_task_group() as group, to_app, from_test:
        group.start_soon(run_lifespan, app, from_test.receive, send)
        await to_app.send({"type": "lifespan.startup"})
        await started.wait()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9", timeout=30) as client:
            yield client
        await to_app.send({"type": "lifespan.shutdown"})
        await stopped.wait()


async def run_lifespan(app: ASGIApp, receive: Callable[[], Any], send: Callable[[Message], Any]) -> None:
    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)


async def call(client: httpx.AsyncClient, token: str, tool: str) -> httpx.Response:
    """A 2026-07-28 tools/call of `tool` without arguments, sent with `token`."""
    meta = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": meta}}
    headers = {
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    return await client.post("/mcp", headers=headers, json=body)


def structured(response: httpx.Response) -> dict[str, Any]:
    """The tool result's structured content, from a JSON or an event-stream answer."""
    assert response.status_code == 200, response.text
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    found: dict[str, Any] = json.loads(text)["result"]["structuredContent"]
    return found


async def account_reached(client: httpx.AsyncClient, token: str) -> tuple[str, str]:
    info = structured(await call(client, token, "get_server_info"))
    return info["account"]["name"], info["account"]["login"]


async def test_each_bearer_token_reaches_only_its_own_account(dovecot: Dovecot, tmp_path: Path) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    async with serving(accounts_env(tmp_path, alice, bob)) as client:
        reached = [await account_reached(client, token) for token in (ALICE_TOKEN, BOB_TOKEN, ALICE_TOKEN)]
        strangers = [(await call(client, token, "get_server_info")).status_code for token in ("", "not-a-token")]
    assert reached == [("alice", alice.username), ("bob", bob.username), ("alice", alice.username)]
    assert strangers == [401, 401]


async def test_a_reload_refuses_a_removed_accounts_token_and_serves_the_others(
    dovecot: Dovecot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routing, "RELOAD_POLL", 0.05)  # the file is looked at every 50 ms, not every 2 s
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = accounts_env(tmp_path, alice, bob)
    accounts_file = Path(env["IMAP_MCP_ACCOUNTS_FILE"])
    async with serving(env) as client:
        before = await account_reached(client, ALICE_TOKEN)
        text = accounts_file.read_text()
        accounts_file.write_text(text[text.index("[accounts.bob]") :])
        with anyio.fail_after(10):
            while (refused := await call(client, ALICE_TOKEN, "get_server_info")).status_code == 200:
                await anyio.sleep(0.05)
        still = await account_reached(client, BOB_TOKEN)
    assert before == ("alice", alice.username)
    assert refused.status_code == 401 and ALICE_TOKEN not in refused.text
    assert still == ("bob", bob.username)
