"""Account routing and the accounts reload in this process: the fast lane's guard of two promises that
`test_accounts_serving` and `test_accounts_reload` (marked slow: they start `imap-mcp serve`) show end to end.

The app is the one `imap-mcp serve` runs with an accounts file (`accounts_http_app`), driven over ASGI with its
lifespan running; its mailboxes are real Dovecot users.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from harness import ALICE_TOKEN, BOB_TOKEN, accounts_env, new_account
from in_process import call, serving_app, structured

from imap_mcp.server.accounts import routing
from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.accounts.serving import accounts_http_app
from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def serving(env: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    """The accounts app of `env`, its lifespan started (and ended after), and a client of it."""
    async with serving_app(accounts_http_app(load_accounts(env), env)) as client:
        yield client


async def account_reached(client: httpx.AsyncClient, token: str) -> tuple[str, str]:
    info = structured(await call(client, token, "get_server_info"))
    return info["account"]["name"], info["account"]["login"]


async def test_each_bearer_token_reaches_only_its_own_account(dovecot: Dovecot, tmp_path: Path) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    async with serving(accounts_env(tmp_path, alice, bob)) as client:
        reached = [await account_reached(client, token) for token in (ALICE_TOKEN, BOB_TOKEN, ALICE_TOKEN)]
        strangers = [(await call(client, token, "get_server_info")).status_code for token in ("", "not-a-token")]
    assert reached == [("alice", alice.username), ("bob", bob.username), ("alice", alice.username)]
    assert strangers == [401, 401]


async def test_a_reload_refuses_a_removed_accounts_token_and_serves_the_others(
    dovecot: Dovecot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routing, "RELOAD_POLL", 0.05)  # the file is looked at every 50 ms, not every 2 s
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = accounts_env(tmp_path, alice, bob)
    accounts_file = Path(env["IMAP_MCP_ACCOUNTS_FILE"])
    async with serving(env) as client:
        before = await account_reached(client, ALICE_TOKEN)
        text = accounts_file.read_text()
        accounts_file.write_text(text[text.index("[accounts.bob]") :])
        with anyio.fail_after(10):
            while (refused := await call(client, ALICE_TOKEN, "get_server_info")).status_code == 200:
                await anyio.sleep(0.05)
        still = await account_reached(client, BOB_TOKEN)
    assert before == ("alice", alice.username)
    assert refused.status_code == 401 and ALICE_TOKEN not in refused.text
    assert still == ("bob", bob.username)
