"""imap-mcp behind the FastMCP proxy (`tests/gateway/fastmcp_proxy.py`, pinned 4.2.3), a person answering each
guarded call end to end.

`imap-mcp serve` (bearer token, sending through an SMTP listener of the test) is proxied by `create_proxy`;
the SDK client talks to the proxy in both eras, offering a dialog that `Person` answers. The proxy mirrors
the client's era upstream: in 2026-07-28 it relays imap-mcp's `input_required` result and passes the answer's
`inputResponses` and `requestState` back; in 2025-11-25 it forwards imap-mcp's pushed elicitation. Either
way the person is asked once, and what they said is counted where it lands: at the SMTP listener (one message
after one yes, none after a no) and at the IMAP server (the delete ran once).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from gateway.fastmcp_proxy import PINNED_VERSION, installed_version, run_proxy
from harness import Account, Person, fresh_message, http_server, message_ids, seeded_account, structured
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("fastmcp")]

UPSTREAM_TOKEN = "fastmcp-to-imap-mcp-token-5c02"
ERAS = ("legacy", "2026-07-28")
#: how the person's answer reached imap-mcp: pushed mid-call (2025-11-25), or in the retry's `inputResponses`
APPROVED_BY = {"legacy": "push", "2026-07-28": "dialog"}
MESSAGE = {"to": ["friend@example.net"], "subject": "Through the proxy", "body": "Sent after a yes.\n"}


@dataclass(frozen=True)
class Deployment:
    """imap-mcp behind a running proxy: the account, its SMTP listener, imap-mcp's and the proxy's MCP URLs."""

    account: Account
    smtp: CaptureSMTP
    upstream: str
    url: str


@pytest.fixture(scope="module")
def deployment(dovecot: Dovecot, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    home = tmp_path_factory.mktemp("fastmcp")
    account = seeded_account(dovecot)
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        env = account.env(**smtp.env(), SMTP_FROM=SENDER, IMAP_MCP_AUTH_TOKENS=UPSTREAM_TOKEN)
        with (
            http_server(env, log_path=home / "imap-mcp.log") as upstream,
            run_proxy(upstream, UPSTREAM_TOKEN, home / "proxy.log") as url,
        ):
            yield Deployment(account, smtp, upstream, url)


@asynccontextmanager
async def proxy_client(deployment: Deployment, era: str, person: Person | None = None) -> AsyncIterator[Client]:
    """The SDK client on the proxy, in `era`; with `person`, it offers a dialog."""
    options: dict[str, Any] = {"elicitation_callback": person} if person else {}
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(deployment.url, http_client=http), mode=era, **options) as client,
    ):
        yield client


@asynccontextmanager
async def direct_client(deployment: Deployment) -> AsyncIterator[Client]:
    """The SDK client on imap-mcp itself, with the proxy's token."""
    headers = {"Authorization": f"Bearer {UPSTREAM_TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(deployment.upstream, http_client=http), mode="2026-07-28") as client,
    ):
        yield client


async def test_the_pinned_proxy_lists_every_tool_with_its_hints(deployment: Deployment) -> None:
    assert installed_version() == PINNED_VERSION
    async with direct_client(deployment) as direct:
        own = {t.name: t for t in (await direct.list_tools()).tools}
    for era in ERAS:
        async with proxy_client(deployment, era) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
        # the proxy writes the schemas its own way (references inlined), so the names and hints are compared
        assert set(listed) == set(own), era
        for name, tool in own.items():
            assert listed[name].annotations == tool.annotations, (era, name)


@pytest.mark.parametrize("era", ERAS)
async def test_a_person_says_yes_to_a_send_and_one_message_leaves(deployment: Deployment, era: str) -> None:
    person = Person()
    before = len(deployment.smtp.messages)
    async with proxy_client(deployment, era, person) as client:
        sent = structured(await client.call_tool("send_message", {**MESSAGE, "subject": f"yes {era}"}))
    assert sent["status"] == "sent" and sent["approved_by"] == APPROVED_BY[era]
    assert len(person.shown) == 1
    arrived = deployment.smtp.messages[before:]
    assert [m["Subject"] for m in arrived] == [f"yes {era}"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_person_says_no_to_a_send_and_nothing_leaves(deployment: Deployment, era: str) -> None:
    person = Person(action="decline")
    before = len(deployment.smtp.messages)
    async with proxy_client(deployment, era, person) as client:
        result = await client.call_tool("send_message", {**MESSAGE, "subject": f"no {era}"})
    assert len(person.shown) == 1
    assert (result.structured_content or {}).get("status") != "sent"
    assert len(deployment.smtp.messages) == before


@pytest.mark.parametrize("era", ERAS)
async def test_a_person_says_yes_to_a_delete_and_it_runs_once(deployment: Deployment, era: str) -> None:
    account = deployment.account
    victim = fresh_message(account, f"proxy delete {era}")
    trash_before = set(message_ids(account, "Trash"))
    person = Person()
    async with proxy_client(deployment, era, person) as client:
        done = structured(await client.call_tool("delete_messages", {"ids": [victim]}))
    assert done["status"] == "done" and done["approved_by"] == APPROVED_BY[era] and done["ids"] == [victim]
    assert len(person.shown) == 1
    assert victim not in message_ids(account, "INBOX")
    assert len(set(message_ids(account, "Trash")) - trash_before) == 1
