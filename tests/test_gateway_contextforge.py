"""imap-mcp behind IBM ContextForge (`tests/gateway/contextforge.py`, pinned 1.1.0), set up as an operator would.

`imap-mcp serve` (bearer token) is registered with the gateway over Streamable HTTP and exposed
through a virtual server; the SDK client talks to the virtual server's `/mcp` in both eras. The
gateway runs in both of its upstream modes: `auto` (it speaks to imap-mcp in the era it
negotiates) and `legacy` (2025-11-25 upstream sessions whatever its own client speaks — the mode
in which it copies a 2026-07-28 client's `_meta` keys into the 2025-11-25 session requests).
Its upstream client declares no elicitation capability, so guarded tools take the two-call token in
every mode and era: its `input_required` relay (1.1.0 passes `inputResponses` and `requestState` through
for 2026-07-28 clients) is never reached, because imap-mcp asks by dialog only a caller that says it can
show one. What the token path does is counted where it lands: at the SMTP listener and the IMAP server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from gateway.contextforge import PINNED_VERSION, Gateway, run_gateway
from harness import (
    Account,
    Person,
    fresh_message,
    http_server,
    message_ids,
    seeded_account,
    served,
    structured,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.config import load_settings
from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("contextforge")]

UPSTREAM_TOKEN = "contextforge-to-imap-mcp-token-7a41"
ERAS = ("legacy", "2026-07-28")
PREFIX = "imap-"
MESSAGE = {"to": ["friend@example.net"], "subject": "Through the gateway", "body": "Sent with the token.\n"}


@dataclass(frozen=True)
class Deployment:
    """imap-mcp behind one running gateway: the account, its SMTP listener and settings, the virtual server's
    MCP URL, the admin token."""

    account: Account
    smtp: CaptureSMTP
    env: dict[str, str]
    gateway: Gateway
    mcp_url: str
    tools: dict[str, dict[str, Any]]


def gateway_name(tool: str) -> str:
    """The name ContextForge gives an upstream tool: the gateway's slug, a dash, dashes for underscores."""
    return PREFIX + tool.replace("_", "-")


@pytest.fixture(scope="module", params=["auto", "legacy"])
def deployment(
    request: pytest.FixtureRequest, dovecot: Dovecot, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    home = tmp_path_factory.mktemp(f"contextforge-{request.param}")
    account = seeded_account(dovecot)
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        env = account.env(**smtp.env(), SMTP_FROM=SENDER, IMAP_MCP_AUTH_TOKENS=UPSTREAM_TOKEN)
        with (
            http_server(env, log_path=home / "imap-mcp.log") as url,
            run_gateway(home, request.param) as gateway,
        ):
            tools = gateway.register("imap", url, UPSTREAM_TOKEN)
            mcp_url = gateway.virtual_server("mail", [tool["id"] for tool in tools])
            yield Deployment(account, smtp, env, gateway, mcp_url, {tool["name"]: tool for tool in tools})


@asynccontextmanager
async def gateway_client(deployment: Deployment, era: str, person: Person | None = None) -> AsyncIterator[Client]:
    """The SDK client on the virtual server, in `era`; with `person`, it offers a dialog."""
    options: dict[str, Any] = {"elicitation_callback": person} if person else {}
    headers = {"Authorization": f"Bearer {deployment.gateway.token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(deployment.mcp_url, http_client=http), mode=era, **options) as client,
    ):
        yield client


async def test_the_pinned_gateway_lists_every_tool_with_its_schemas(deployment: Deployment) -> None:
    assert deployment.gateway.api("GET", "/version")["app"]["version"] == PINNED_VERSION
    async with served(load_settings(deployment.env), mode="legacy") as direct:
        own = {t.name: t for t in (await direct.list_tools()).tools}
    for era in ERAS:
        async with gateway_client(deployment, era) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {gateway_name(name) for name in own}, era
        for name, tool in own.items():
            through = listed[gateway_name(name)]
            assert through.input_schema == tool.input_schema, (era, name)
            assert through.output_schema == tool.output_schema, (era, name)
            assert through.annotations == tool.annotations, (era, name)


@pytest.mark.parametrize("era", ERAS)
async def test_list_search_and_get_through_the_gateway(deployment: Deployment, era: str) -> None:
    async with gateway_client(deployment, era) as client:
        mailboxes = structured(await client.call_tool(gateway_name("list_mailboxes"), {}))
        found = structured(await client.call_tool(gateway_name("search_messages"), {"limit": 3}))
        first = found["messages"][0]
        message = structured(await client.call_tool(gateway_name("get_message"), {"id": first["id"]}))
    assert mailboxes["mailboxes"][0]["name"] == "INBOX"
    assert found["total"] == len(message_ids(deployment.account, "INBOX")) and len(found["messages"]) == 3
    assert message["id"] == first["id"] and message["headers"]["subject"] == first["subject"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("tool", ["delete_messages", "move_messages"])
async def test_guarded_changes_complete_by_the_two_call_token(deployment: Deployment, era: str, tool: str) -> None:
    """First call: a confirm_token and nothing changed; the same call plus the token: done, structured intact."""
    account = deployment.account
    victim = fresh_message(account, f"gateway {tool} {era}")
    args: dict[str, Any] = {"ids": [victim]} | ({"destination": "Archive"} if tool == "move_messages" else {})
    destination = "Archive" if tool == "move_messages" else "Trash"
    before = set(message_ids(account, destination))
    async with gateway_client(deployment, era) as client:
        pending = structured(await client.call_tool(gateway_name(tool), args))
        assert pending["status"] == "confirmation_required" and pending["count"] == len(pending["ids"])
        assert victim in message_ids(account, "INBOX")
        confirmed = {**args, "confirm_token": pending["confirm_token"]}
        done = structured(await client.call_tool(gateway_name(tool), confirmed))
    assert done["status"] == "done" and done["approved_by"] == "token" and done["ids"] == [victim]
    assert victim not in message_ids(account, "INBOX")
    arrived = set(message_ids(account, destination)) - before
    assert len(arrived) == 1 and set(done["new_ids"]) == arrived


async def test_a_dialog_does_not_reach_the_person_today(deployment: Deployment) -> None:
    """The client offers a dialog, but the gateway's upstream client declares no elicitation: the token
    path answers and nobody is asked. The day ContextForge forwards the capability, this test fails."""
    victim = fresh_message(deployment.account, "gateway dialog")
    person = Person()
    for era in ERAS:
        async with gateway_client(deployment, era, person) as client:
            pending = structured(await client.call_tool(gateway_name("delete_messages"), {"ids": [victim]}))
        assert pending["status"] == "confirmation_required", era
    assert person.shown == []
    assert victim in message_ids(deployment.account, "INBOX")


@pytest.mark.parametrize("era", ERAS)
async def test_a_send_through_the_gateway_leaves_once_with_its_token(deployment: Deployment, era: str) -> None:
    """Counted at the SMTP listener: nothing after the first call, one message after the token, none more when
    the same call and token come again."""
    smtp, before = deployment.smtp, len(deployment.smtp.messages)
    message = {**MESSAGE, "subject": f"gateway send {era}"}
    async with gateway_client(deployment, era, Person()) as client:
        pending = structured(await client.call_tool(gateway_name("send_message"), message))
        unsent = len(smtp.messages) - before
        confirmed = {**message, "confirm_token": pending["confirm_token"]}
        sent = structured(await client.call_tool(gateway_name("send_message"), confirmed))
        await client.call_tool(gateway_name("send_message"), confirmed)
    assert pending["status"] == "confirmation_required" and unsent == 0
    assert sent["status"] == "sent" and sent["approved_by"] == "token"
    assert [m["Subject"] for m in smtp.messages[before:]] == [message["subject"]]
