"""What imap-mcp must hold for a dialog a gateway relays, in the fast lane (the FastMCP proxy and ContextForge
themselves run in `test_gateway_fastmcp` and `test_gateway_contextforge`, marked slow: they start processes).

A 2026-07-28 gateway relays the `input_required` result to its client and the client's retry back, the
answer's `inputResponses` and `requestState` in it. Here the relay is plain HTTP written in the test: it
forwards the JSON body (parsed and written again, as a gateway does) and the MCP headers only, under its
own bearer token, each call on its own; no session, no cookie, nothing of the client's connection. The
question's state then travels only in `requestState`, and the ledger runs the answer once however often the
relay sends it (counted at the SMTP listener).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from harness import new_account
from in_process import call, result_of, serving
from smtp_capture import SENDER, CaptureSMTP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = pytest.mark.anyio

RELAY_TOKEN = "relay-to-imap-mcp-token-0123456789abcdef"
CLIENT_TOKEN = "client-token-the-relay-never-forwards"
#: the headers the relay passes on (its own Authorization replaces the client's)
FORWARDED = ("content-type", "accept", "mcp-protocol-version", "mcp-method", "mcp-name")
DIALOG: dict[str, Any] = {"elicitation": {"form": {}}}
MESSAGE = {"to": ["friend@example.net"], "subject": "Relayed", "body": "Sent after one yes.\n"}


def relay_to(upstream: httpx.AsyncClient, bodies: list[dict[str, Any]]) -> Starlette:
    """An HTTP relay of `POST /mcp` to `upstream`; every body it forwards is added to `bodies`."""

    async def forward(request: Request) -> Response:
        body = await request.json()
        bodies.append(body)
        headers = {name: value for name, value in request.headers.items() if name in FORWARDED}
        headers["authorization"] = f"Bearer {RELAY_TOKEN}"
        answer = await upstream.post("/mcp", headers=headers, content=json.dumps(body))
        return Response(answer.content, answer.status_code, media_type=answer.headers.get("content-type"))

    return Starlette(routes=[Route("/mcp", forward, methods=["POST"])])


@asynccontextmanager
async def relayed(env: dict[str, str], bodies: list[dict[str, Any]]) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the relay in front of the app `imap-mcp serve` runs for `env`."""
    async with serving(env) as upstream:
        transport = httpx.ASGITransport(app=relay_to(upstream, bodies))
        async with httpx.AsyncClient(transport=transport, base_url="http://relay.test", timeout=30) as client:
            yield client


async def test_a_relayed_answer_runs_once_even_when_the_relay_sends_it_twice(dovecot: Dovecot) -> None:
    """Counted at the SMTP listener: one message after one yes, sent twice by the relay."""
    account = new_account(dovecot)
    bodies: list[dict[str, Any]] = []
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        env = account.env(**smtp.env(), SMTP_FROM=SENDER, IMAP_MCP_AUTH_TOKENS=RELAY_TOKEN)
        async with relayed(env, bodies) as client:
            asked = result_of(await call(client, CLIENT_TOKEN, "send_message", MESSAGE, DIALOG))
            unsent = len(smtp.messages)
            answers = {key: {"action": "accept", "content": {"approve": True}} for key in asked["inputRequests"]}
            answer = {"inputResponses": answers, "requestState": asked["requestState"]}
            done = result_of(await call(client, CLIENT_TOKEN, "send_message", MESSAGE, DIALOG, **answer))
            again = await call(client, CLIENT_TOKEN, "send_message", MESSAGE, DIALOG, **answer)
        sent = [message["Subject"] for message in smtp.messages]
    assert asked["resultType"] == "input_required" and unsent == 0
    assert done["structuredContent"]["status"] == "sent" and done["structuredContent"]["approved_by"] == "dialog"
    assert again.status_code == 200 and sent == [MESSAGE["subject"]]
    assert [body["params"].get("requestState") for body in bodies] == [
        None,
        asked["requestState"],
        asked["requestState"],
    ]
