"""A caller cannot lock others out: 2025-11-25 sessions are bounded per token, expire, and stay their
owner's while they live; request bodies are size-checked before they are buffered, on every path.

Driven in process through the real ASGI app (`http_app`: AccessControl → ModernEnvelopeRouting →
the SDK's session manager) with the SDK's session manager running, against Dovecot.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from harness import Account
from starlette.types import Message

from imap_mcp.server.serving.app import build_server
from imap_mcp.server.serving.http_access import MAX_BODY_BYTES, HttpSettings, SessionTable
from imap_mcp.server.serving.transports import http_app
from imap_mcp.server.setting_values import Secret

pytestmark = pytest.mark.anyio

TOKEN_A = "token-a-0123456789abcdef"
TOKEN_B = "token-b-0123456789abcdef"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
BASE = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def as_token(token: str | None, session: str | None = None) -> dict[str, str]:
    headers = dict(BASE)
    if token:
        headers["authorization"] = f"Bearer {token}"
    if session:
        headers.update({"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
    return headers


@contextlib.asynccontextmanager
async def serving(account: Account, **http: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The HTTP app for `account` with `http` settings, its session manager running, and a client for it."""
    mcp = build_server(account.settings())
    app = http_app(mcp, HttpSettings(**http))
    async with mcp.session_manager.run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9", timeout=10) as client:
            yield client


async def open_session(http: httpx.AsyncClient, token: str | None) -> httpx.Response:
    return await http.post("/mcp", headers=as_token(token), json=INITIALIZE)


async def test_sessions_are_bounded_per_token_and_one_token_cannot_lock_out_another(account: Account) -> None:
    tokens = (Secret(TOKEN_A), Secret(TOKEN_B))
    async with serving(account, auth_tokens=tokens, sessions_per_caller=3) as http:
        unauthenticated = [await open_session(http, None) for _ in range(20)]
        by_a = [await open_session(http, TOKEN_A) for _ in range(5)]
        by_b = await open_session(http, TOKEN_B)
        first_a = by_a[0].headers["mcp-session-id"]
        closed = await http.delete("/mcp", headers=as_token(TOKEN_A, first_a))
        a_again = await open_session(http, TOKEN_A)
    assert {r.status_code for r in unauthenticated} == {401}
    assert [r.status_code for r in by_a] == [200, 200, 200, 429, 429]
    assert "Too many open sessions for this caller (3)" in by_a[3].text
    assert by_b.status_code == 200 and "mcp-session-id" in by_b.headers
    assert closed.status_code == 200
    assert a_again.status_code == 200, "closing a session gives its room back"


async def test_without_tokens_everyone_is_one_caller_with_a_bound(account: Account) -> None:
    async with serving(account, sessions_per_caller=2) as http:
        statuses = [(await open_session(http, None)).status_code for _ in range(4)]
    assert statuses == [200, 200, 429, 429]


async def test_a_session_stays_its_owners_through_any_turnover(account: Account) -> None:
    tokens = (Secret(TOKEN_A), Secret(TOKEN_B))
    async with serving(account, auth_tokens=tokens, sessions_per_caller=2) as http:
        owned = (await open_session(http, TOKEN_A)).headers["mcp-session-id"]
        for _ in range(30):  # another token opens and closes sessions over and over
            other = (await open_session(http, TOKEN_B)).headers["mcp-session-id"]
            assert (await http.delete("/mcp", headers=as_token(TOKEN_B, other))).status_code == 200
        taken = await http.post("/mcp", headers=as_token(TOKEN_B, owned), json=TOOLS_LIST)
        unknown = await http.post("/mcp", headers=as_token(TOKEN_B, "0" * 32), json=TOOLS_LIST)
        await http.post(
            "/mcp", headers=as_token(TOKEN_A, owned), json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        used = await http.post("/mcp", headers=as_token(TOKEN_A, owned), json=TOOLS_LIST)
    assert taken.status_code == 403 and "another token" in taken.text
    assert unknown.status_code == 404
    assert used.status_code == 200 and "list_mailboxes" in used.text


def test_the_session_table_never_evicts_a_live_session() -> None:
    """However many callers open sessions, the first one's owner is still known (the old table forgot it
    after 10,000 others, and then accepted another token on it)."""
    table = SessionTable(per_caller=1, idle_seconds=1800, clock=lambda: 0.0)
    for caller in range(20_001):
        assert table.admit(f"caller-{caller}")
        table.opened(f"session-{caller}", f"caller-{caller}")
        table.admitted(f"caller-{caller}", opened=True)
        table.leave(f"session-{caller}")
    assert table.owner("session-0") == "caller-0"
    assert not table.admit("caller-0")


async def test_an_idle_session_expires_and_frees_its_room(account: Account) -> None:
    async with serving(account, sessions_per_caller=1, session_idle_seconds=1) as http:
        first = await open_session(http, None)
        refused = await open_session(http, None)
        await anyio.sleep(1.5)
        gone = await http.post("/mcp", headers=as_token(None, first.headers["mcp-session-id"]), json=TOOLS_LIST)
        second = await open_session(http, None)
    assert (first.status_code, refused.status_code) == (200, 429)
    assert gone.status_code == 404
    assert second.status_code == 200


class Body:
    """An ASGI `receive` handing out `total` bytes in chunks of `chunk`, counting what was taken."""

    def __init__(self, total: int, chunk: int = 64 * 1024) -> None:
        self.left, self.chunk, self.taken = total, chunk, 0

    async def __call__(self) -> dict[str, Any]:
        if self.left <= 0:
            await anyio.sleep_forever()
        size = min(self.chunk, self.left)
        self.left -= size
        self.taken += size
        return {"type": "http.request", "body": b" " * size, "more_body": self.left > 0}


@pytest.mark.parametrize("version", [None, "2025-11-25", "2026-07-28"], ids=["no-version", "legacy", "modern"])
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
async def test_an_oversized_body_is_refused_before_it_is_buffered(
    account: Account, version: str | None, declared: bool
) -> None:
    total = 3 * MAX_BODY_BYTES
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
    if version:
        headers.append((b"mcp-protocol-version", version.encode()))
    if declared:
        headers.append((b"content-length", str(total).encode()))
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b""}
    scope.update({"asgi": {"version": "3.0"}, "http_version": "1.1", "scheme": "http", "root_path": ""})
    scope.update({"server": ("127.0.0.1", 9), "client": ("127.0.0.1", 1)})
    mcp = build_server(account.settings())
    app = http_app(mcp, HttpSettings())
    body = Body(total)
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async with mcp.session_manager.run():
        await app(scope, body, send)
    assert sent[0]["status"] == 413
    if declared:
        assert body.taken == 0, "read although its Content-Length said it was too large"
    else:
        assert body.taken <= MAX_BODY_BYTES + body.chunk
