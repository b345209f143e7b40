"""Every tool with IMAP_AUTH=oauth2, over stdio and HTTP, while the access token expires mid-session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from harness import Account, Person, http_server, stdio_params, structured
from mcp import Client
from mcp.client.stdio import stdio_client
from oauth_provider import AuthorizationServer
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = pytest.mark.anyio

Connect = Callable[[dict[str, str], Person], AbstractAsyncContextManager[Client]]


def over_stdio(log_path: Path) -> Connect:
    @asynccontextmanager
    async def connect(env: dict[str, str], person: Person) -> AsyncIterator[Client]:
        with open(log_path, "w") as log:
            transport = stdio_client(stdio_params(env), errlog=log)
            async with Client(transport, mode="2026-07-28", elicitation_callback=person) as client:
                yield client

    return connect


def over_http(log_path: Path) -> Connect:
    @asynccontextmanager
    async def connect(env: dict[str, str], person: Person) -> AsyncIterator[Client]:
        with http_server(env, log_path=log_path) as url:
            async with Client(url, mode="2026-07-28", elicitation_callback=person) as client:
                yield client

    return connect


async def _every_tool(client: Client, expire_mid_session: Callable[[], None]) -> list[Any]:
    """Call each tool once; halfway, every access token runs out and every IMAP session is dropped."""
    results: list[Any] = []

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(name, arguments)
        results.append(result)
        return structured(result)

    assert "INBOX" in {m["name"] for m in (await call("list_mailboxes", {}))["mailboxes"]}
    invoice = (await call("search_messages", {"subject": "Invoice and overview"}))["messages"][0]["id"]
    await call("get_message", {"id": invoice})
    await call("get_attachments", {"id": invoice})
    expire_mid_session()
    ids = [m["id"] for m in (await call("search_messages", {"mailbox": "INBOX", "limit": 3}))["messages"]]
    await call("set_message_flags", {"ids": ids[:1], "add": ["\\Flagged"]})
    await call("save_draft", {"to": ["bob@example.net"], "subject": "Plan", "body": "Hi Bob"})
    await call("manage_mailbox", {"action": "create", "mailbox": "Receipts"})
    await call("move_messages", {"ids": ids[1:2], "destination": "Archive"})
    await call("delete_messages", {"ids": ids[2:3]})
    await call("send_message", {"to": ["alice@example.com"], "subject": "Lunch", "body": "Friday?\n"})
    await call("reply_to_message", {"id": invoice, "body": "Thanks.\n"})
    return results


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_every_tool_works_and_the_token_expiring_mid_session_is_invisible(
    transport: str,
    oauth_env: dict[str, str],
    oauth_account: Account,
    oauth_dovecot: Dovecot,
    provider: AuthorizationServer,
    tmp_path: Path,
) -> None:
    log_path = tmp_path / "server.log"
    person = Person()

    def expire_mid_session() -> None:
        provider.expire_access_tokens()
        oauth_dovecot.doveadm("kick", oauth_account.username)

    connect = (over_stdio if transport == "stdio" else over_http)(log_path)
    with CaptureSMTP(oauth=provider.token_is_active) as smtp:
        env = {**oauth_env, **smtp.env(), "SMTP_FROM": SENDER}
        before = provider.refreshes
        async with connect(env, person) as client:
            results = await _every_tool(client, expire_mid_session)
    assert [r.is_error for r in results] == [False] * 12
    assert len(person.shown) == 4, "move, delete, send and reply asked the person"
    assert len(smtp.messages) == 2 and all(e.authenticated for e in smtp.envelopes)
    assert provider.refreshes == before + 2, "one token before, one after it expired"
    log = log_path.read_text()
    assert "imap-mcp: " in log, "the server's own log was captured"
    shown = "".join(str(r.model_dump()) for r in results) + "".join(person.shown) + log
    assert provider.leaked(shown) == []
