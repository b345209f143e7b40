"""HTTP access control: bearer tokens, Host and Origin lists, the health endpoint, the ASGI factory."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest
from harness import Account, http_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from imap_mcp.server.serving.asgi import create_app
from imap_mcp.server.serving.http_access import load_http_settings, principal_for_token
from imap_mcp.server.setting_values import ConfigError

pytestmark = pytest.mark.anyio

TOKEN_A = "token-a-0123456789abcdef"
TOKEN_B = "token-b-0123456789abcdef"


def list_tools_request() -> tuple[dict[str, str], dict[str, Any]]:
    """A 2026-07-28 tools/list POST, as a client sends it."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    return headers, body


def post(url: str, **extra_headers: str) -> httpx.Response:
    headers, body = list_tools_request()
    headers.update({k.replace("_", "-"): v for k, v in extra_headers.items()})
    return httpx.post(url, headers=headers, json=body, timeout=10)


@pytest.mark.slow
def test_tokens_are_required_when_configured(account: Account) -> None:
    with http_server(account.env(IMAP_MCP_AUTH_TOKENS=f"{TOKEN_A},{TOKEN_B}")) as url:
        missing = post(url)
        wrong = post(url, authorization="Bearer not-a-valid-token-at-all")
        good_a = post(url, authorization=f"Bearer {TOKEN_A}")
        good_b = post(url, authorization=f"bearer {TOKEN_B}")
        health = httpx.get(url.replace("/mcp", "/healthz"), timeout=10)
    for refused in (missing, wrong):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer ")
    assert good_a.status_code == 200 and good_b.status_code == 200
    assert "list_mailboxes" in good_a.text
    assert health.status_code == 200


@pytest.mark.slow
def test_foreign_origin_is_refused(account: Account) -> None:
    with http_server(account.env()) as url:
        foreign = post(url, origin="https://evil.example")
        local = post(url, origin="http://localhost:6274")
    assert foreign.status_code == 403
    assert local.status_code == 200


@pytest.mark.slow
def test_host_list(account: Account) -> None:
    with http_server(account.env()) as url:
        default_refuses = post(url, host="mcp.example.com")
        portless_local = post(url, host="127.0.0.1")
    with http_server(account.env(IMAP_MCP_ALLOWED_HOSTS="mcp.example.com")) as url:
        allowed = post(url, host="mcp.example.com:443", origin="https://mcp.example.com")
        other = post(url, host="other.example.com")
    assert default_refuses.status_code == 421
    assert portless_local.status_code == 200
    assert allowed.status_code == 200
    assert other.status_code == 421


@pytest.mark.slow
async def test_sdk_client_with_a_token(account: Account) -> None:
    with http_server(account.env(IMAP_MCP_AUTH_TOKENS=TOKEN_A)) as url:
        async with (
            httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN_A}"}) as http,
            Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client,
        ):
            result = await client.call_tool("list_mailboxes", {})
    assert not result.is_error


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"IMAP_MCP_AUTH_TOKENS": "short"}, "IMAP_MCP_AUTH_TOKENS"),
        ({"IMAP_MCP_LEGACY_HTTP": "sticky"}, "IMAP_MCP_LEGACY_HTTP"),
    ],
)
def test_invalid_http_settings(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_http_settings(env)


def test_principal_is_a_digest_not_the_token() -> None:
    principal = principal_for_token(TOKEN_A)
    assert TOKEN_A not in principal
    assert principal != principal_for_token(TOKEN_B)


async def test_asgi_factory_serves_with_its_lifespan(account: Account) -> None:
    """The factory's app works under any ASGI server that runs its lifespan (here: in-process)."""
    app = create_app(account.env())
    headers, body = list_tools_request()
    async with _lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as http:
            response = await http.post("/mcp", headers=headers, json=body)
            health = await http.get("/healthz")
    assert response.status_code == 200 and "list_mailboxes" in response.text
    assert health.status_code == 200


class _lifespan:
    """Drive an ASGI app's lifespan startup and shutdown, as an ASGI server does."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __aenter__(self) -> None:
        import anyio

        self._send_to_app, receive_from_test = anyio.create_memory_object_stream[dict[str, Any]](4)
        send_to_test, self._receive_from_app = anyio.create_memory_object_stream[dict[str, Any]](4)
        self._group = anyio.create_task_group()
        await self._group.__aenter__()

        async def run() -> None:
            await self.app(
                {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                receive_from_test.receive,
                send_to_test.send,
            )

        self._group.start_soon(run)
        await self._send_to_app.send({"type": "lifespan.startup"})
        assert (await self._receive_from_app.receive())["type"] == "lifespan.startup.complete"

    async def __aexit__(self, *exc: object) -> None:
        await self._send_to_app.send({"type": "lifespan.shutdown"})
        assert (await self._receive_from_app.receive())["type"] == "lifespan.shutdown.complete"
        await self._group.__aexit__(None, None, None)


@pytest.mark.slow
def test_a_legacy_session_belongs_to_the_token_that_opened_it(account: Account) -> None:
    """A 2025-11-25 session's dialogs are pushed over it, so another caller must not be able to use it."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with http_server(account.env(IMAP_MCP_AUTH_TOKENS=f"{TOKEN_A},{TOKEN_B}")) as url:
        as_a = {**base, "authorization": f"Bearer {TOKEN_A}"}
        opened = httpx.post(url, headers=as_a, json=initialize, timeout=10)
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        httpx.post(url, headers={**as_a, **session}, json=initialized, timeout=10)
        by_b = httpx.post(url, headers={**base, **session, "authorization": f"Bearer {TOKEN_B}"}, json=tools_list)
        by_a = httpx.post(url, headers={**as_a, **session}, json=tools_list, timeout=10)
    assert opened.status_code == 200
    assert by_b.status_code == 403 and "another token" in by_b.text
    assert by_a.status_code == 200 and "list_mailboxes" in by_a.text


def test_the_asgi_factory_stops_on_a_bad_setting_with_one_line(
    account: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        create_app(account.env(IMAP_MCP_AUTH_TOKENS="short"))
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "IMAP_MCP_AUTH_TOKENS" in lines[0]


def test_the_asgi_factory_prints_the_start_lines(account: Account, capsys: pytest.CaptureFixture[str]) -> None:
    create_app(account.env(ELICITATION="false"))
    err = capsys.readouterr().err
    assert "imap-mcp: ELICITATION=false — guarded tools fall back to the two-call token" in err
    assert "IMAP_MCP_SEAL_KEYS is not set" in err
