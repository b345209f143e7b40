"""An HTTP app of imap-mcp driven in this process over ASGI, its lifespan running: the fast lane's way to show what
the tests that start `imap-mcp serve` show end to end; `serving` runs the app `imap-mcp serve` runs
(`accounts_http_app`: one account from the environment, or an accounts file)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
from starlette.types import ASGIApp, Message

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.serving.accounts import accounts_http_app

VERSION = "2026-07-28"


@contextlib.asynccontextmanager
async def serving_app(app: ASGIApp, base_url: str = "http://127.0.0.1:9") -> AsyncIterator[httpx.AsyncClient]:
    """`app` with its lifespan started (and ended after), and a client of it."""
    to_app, from_test = anyio.create_memory_object_stream[Message](4)
    started, stopped = anyio.Event(), anyio.Event()

    async def send(message: Message) -> None:
        {"lifespan.startup.complete": started, "lifespan.shutdown.complete": stopped}[message["type"]].set()

    async with anyio.create_task_group() as group, to_app, from_test:
        group.start_soon(run_lifespan, app, from_test.receive, send)
        await to_app.send({"type": "lifespan.startup"})
        await started.wait()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=base_url, timeout=30) as client:
            yield client
        await to_app.send({"type": "lifespan.shutdown"})
        await stopped.wait()


@contextlib.asynccontextmanager
async def serving(env: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    """The accounts app of `env`, its lifespan started (and ended after), and a client of it."""
    async with serving_app(accounts_http_app(load_accounts(env), env)) as client:
        yield client


async def run_lifespan(app: ASGIApp, receive: Callable[[], Any], send: Callable[[Message], Any]) -> None:
    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)


async def call(
    client: httpx.AsyncClient,
    token: str,
    tool: str,
    arguments: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
    **params: Any,
) -> httpx.Response:
    """A 2026-07-28 tools/call of `tool` (without arguments unless given), sent with `token` (none when empty);
    `params` are more of its params (an answer's `inputResponses` and `requestState`)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    call_params = {"name": tool, "arguments": arguments or {}, "_meta": meta, **params}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call_params}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    if token:
        headers["authorization"] = f"Bearer {token}"
    return await client.post("/mcp", headers=headers, json=body)


def result_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result, from a JSON or an event-stream answer."""
    assert response.status_code == 200, response.text
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    found: dict[str, Any] = json.loads(text)["result"]
    return found


def structured(response: httpx.Response) -> dict[str, Any]:
    """The tool result's structured content."""
    found: dict[str, Any] = result_of(response)["structuredContent"]
    return found
