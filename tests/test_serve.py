"""`imap-mcp serve` and stdio at start: who may connect off loopback, the start lines, a port in use."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from harness import Account, http_server, run_cli, wait_for_line
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from imap_mcp.server.demo.dovecot import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKEN = "serve-token-0123456789abcdef"


def nothing_listens(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return False
    return True


def test_a_non_loopback_address_without_tokens_is_refused(account: Account) -> None:
    port = free_port()
    done = run_cli(account.env(), "serve", "--host", "0.0.0.0", "--port", str(port))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "refusing to serve on 0.0.0.0 without IMAP_MCP_AUTH_TOKENS" in lines[0]
    assert "IMAP_MCP_ALLOW_UNAUTHENTICATED=true" in lines[0]
    assert "listening" not in done.stderr and nothing_listens(port)


def test_an_invalid_opt_out_value_exits_2_naming_it(account: Account) -> None:
    done = run_cli(account.env(IMAP_MCP_ALLOW_UNAUTHENTICATED="yes"), "serve", "--host", "0.0.0.0")
    assert done.returncode == 2 and "IMAP_MCP_ALLOW_UNAUTHENTICATED='yes' is not valid" in done.stderr


async def test_a_non_loopback_address_with_tokens_serves_token_holders(account: Account) -> None:
    with http_server(account.env(IMAP_MCP_AUTH_TOKENS=TOKEN), "--host", "0.0.0.0") as url:
        refused = httpx2.post(url, json={}, headers={"accept": "application/json, text/event-stream"})
        assert refused.status_code == 401
        async with (
            httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}) as http,
            Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client,
        ):
            result = await client.call_tool("list_mailboxes", {})
    assert not result.is_error


async def test_a_non_loopback_address_with_the_explicit_opt_out_serves(account: Account) -> None:
    with http_server(account.env(IMAP_MCP_ALLOW_UNAUTHENTICATED="true"), "--host", "0.0.0.0") as url:
        async with Client(url, mode="2026-07-28") as client:
            result = await client.call_tool("list_mailboxes", {})
    assert not result.is_error


def test_a_port_in_use_is_one_line_without_a_banner(account: Account) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run_cli(account.env(), "serve", "--port", str(port))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines == [f"imap-mcp: cannot listen on 127.0.0.1:{port}: the port is already in use: stop what listens "
                     "there, or choose another --port."]  # fmt: skip


def test_serve_says_where_it_listens_and_what_the_check_found(account: Account, tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with http_server(account.env(), log_path=log) as url:
        assert wait_for_line(log, "listening on") == f"imap-mcp: listening on {url}"
        summary = wait_for_line(log, "imap-mcp: check:")
    assert summary == f"imap-mcp: check: IMAP ok for {account.username}@127.0.0.1:{account.server.tls_port} " \
        "(implicit TLS), sending off (SMTP_HOST is not set)"  # fmt: skip
    assert account.password not in log.read_text()


async def test_serve_starts_while_the_imap_server_is_down_and_says_so(account: Account, tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with http_server(account.env(IMAP_PORT=str(free_port())), log_path=log) as url:
        summary = wait_for_line(log, "imap-mcp: check:")
        async with Client(url, mode="2026-07-28") as client:
            result = await client.call_tool("list_mailboxes", {})
    assert "IMAP TCP failed" in summary and "IMAP_PORT" in summary and "Serving anyway" in summary
    assert result.is_error


def test_stdio_without_seal_keys_starts_quietly(account: Account) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "imap_mcp.server", "stdio"],
        env=account.env(),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "IMAP_MCP_SEAL_KEYS" not in done.stderr
