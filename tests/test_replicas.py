"""Two imap-mcp processes behind a real round-robin nginx: any instance answers any request."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Account, http_server
from load_balancer import round_robin
from mcp import Client

pytestmark = pytest.mark.anyio

SHARED_KEYS = "k1-" + "a" * 40 + ",k0-" + "b" * 40


@contextlib.contextmanager
def two_replicas(env_a: dict[str, str], env_b: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """Two `imap-mcp serve` behind nginx; yields (the balancer's MCP URL, its access log)."""
    with http_server(env_a) as url_a, http_server(env_b) as url_b:
        ports = [int(url.rsplit(":", 1)[1].split("/")[0]) for url in (url_a, url_b)]
        with round_robin(ports) as (port, access_log):
            yield f"http://127.0.0.1:{port}/mcp", access_log


def upstreams(access_log: Path) -> Counter[str]:
    return Counter(line.split()[0] for line in access_log.read_text().splitlines() if line.strip())


async def test_2026_requests_alternate_between_replicas(account: Account) -> None:
    env = account.env(IMAP_MCP_SEAL_KEYS=SHARED_KEYS)
    with two_replicas(env, env) as (url, access_log):
        async with Client(url, mode="2026-07-28") as client:
            for _ in range(4):
                result = await client.call_tool("list_mailboxes", {})
                assert not result.is_error
                assert result.structured_content["mailboxes"][0]["name"] == "INBOX"  # type: ignore[index]
        used = upstreams(access_log)
    assert len(used) == 2, used  # both instances answered
    assert min(used.values()) >= 2


async def test_legacy_clients_over_stateless_http_behind_the_balancer(account: Account) -> None:
    """With IMAP_MCP_LEGACY_HTTP=stateless a 2025-11-25 client needs no sticky routing."""
    env = account.env(IMAP_MCP_SEAL_KEYS=SHARED_KEYS, IMAP_MCP_LEGACY_HTTP="stateless")
    with two_replicas(env, env) as (url, access_log):
        async with Client(url, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            for _ in range(3):
                result = await client.call_tool("list_mailboxes", {})
                assert not result.is_error
        assert len(upstreams(access_log)) == 2
