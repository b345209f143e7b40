"""A 2025-11-25 session ignores the 2026-07-28 `_meta` keys a gateway copies into it.

A gateway whose upstream speaks 2025-11-25 while its own client speaks 2026-07-28 (ContextForge
with `MCP_CLIENT_CONNECT_MODE=legacy`) forwards the client's `io.modelcontextprotocol/*` keys
inside requests of its 2025-11-25 session. That session was negotiated by `initialize`; the keys
mean nothing there, so they are ignored rather than compared with the session's version. The
strict 2026-07-28 checks (-32602 / -32020 / -32022) stay for requests outside a session, as
`tests/test_spec_wire.py` and the conformance suite check.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from harness import http_server, seeded_account, stdio_params
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_REQUEST, RequestParamsMeta

from imap_mcp.server.demo.dovecot import Dovecot

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
TOKEN = "legacy-meta-token-0c1d"
COPIED_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "front-client", "version": "1.0"},
}


@pytest.fixture(scope="module")
def url(dovecot: Dovecot) -> Iterator[str]:
    with http_server(seeded_account(dovecot).env(IMAP_MCP_AUTH_TOKENS=TOKEN)) as served:
        yield served


def reply(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC reply from a JSON or an SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        replies: list[dict[str, Any]] = [json.loads(e) for e in events if e and ("result" in e or "error" in e)]
        return replies[-1]
    answer: dict[str, Any] = response.json()
    return answer


class LegacySession:
    """A 2025-11-25 session over raw HTTP, as a gateway's upstream client holds one."""

    def __init__(self, http: httpx.Client, url: str) -> None:
        self.http, self.url, self.next_id = http, url, 1
        self.headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {TOKEN}",
        }
        response = self.post(
            "initialize",
            {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "gateway-upstream", "version": "1.0"},
            },
        )
        assert reply(response)["result"]["protocolVersion"] == LEGACY
        self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = LEGACY
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.http.post(self.url, json=initialized, headers=self.headers).status_code == 202

    def post(self, method: str, params: dict[str, Any]) -> httpx.Response:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return self.http.post(self.url, json=body, headers=self.headers)


@pytest.fixture
def session(url: str) -> Iterator[LegacySession]:
    with httpx.Client(timeout=30) as http:
        yield LegacySession(http, url)


def test_tools_list_in_a_session_ignores_copied_modern_keys(session: LegacySession) -> None:
    answer = reply(session.post("tools/list", {"_meta": COPIED_META}))
    assert "error" not in answer, answer
    assert "list_mailboxes" in {tool["name"] for tool in answer["result"]["tools"]}


def test_tool_call_in_a_session_ignores_copied_modern_keys(session: LegacySession) -> None:
    params = {"name": "list_mailboxes", "arguments": {}, "_meta": COPIED_META}
    answer = reply(session.post("tools/call", params))
    assert "error" not in answer, answer
    assert answer["result"].get("isError") is not True
    assert "INBOX" in {m["name"] for m in answer["result"]["structuredContent"]["mailboxes"]}
    assert "resultType" not in answer["result"]  # served as 2025-11-25: no 2026 result fields


def test_copied_keys_naming_another_version_are_ignored_too(session: LegacySession) -> None:
    meta = dict(COPIED_META, **{"io.modelcontextprotocol/protocolVersion": "v999.0.0"})
    answer = reply(session.post("tools/list", {"_meta": meta}))
    assert "error" not in answer, answer


def test_outside_a_session_the_strict_check_stays(url: str) -> None:
    """No session: a 2025-11-25 header with a 2026-07-28 body is the spec's header mismatch."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {TOKEN}",
        "MCP-Protocol-Version": LEGACY,
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": COPIED_META}}
    with httpx.Client(timeout=30) as http:
        response = http.post(url, json=body, headers=headers)
    assert response.status_code == 400
    mismatch = f"Header mismatch: MCP-Protocol-Version header {LEGACY!r} does not match body"
    assert reply(response) == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32020, "message": mismatch}}


@pytest.mark.slow
@pytest.mark.anyio
async def test_over_stdio_a_handshake_connection_refuses_the_2026_envelope(dovecot: Dovecot) -> None:
    """The SDK's own rule on a stdio connection that began with `initialize`: -32600, nothing served.

    Stated in the README; no stdio gateway is known to mix eras. The day the SDK (or this server)
    serves such a request, this test says so.
    """
    env = seeded_account(dovecot).env()
    async with Client(stdio_client(stdio_params(env)), mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("list_mailboxes", {}, meta=cast(RequestParamsMeta, COPIED_META))
        assert refused.value.code == INVALID_REQUEST
        assert "handshake protocol era" in refused.value.error.message
        assert not (await client.call_tool("list_mailboxes", {})).is_error  # the connection still serves
