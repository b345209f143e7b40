"""Account routing and the accounts reload in this process: the fast lane's guard of two promises that
`test_accounts_serving` and `test_accounts_reload` (marked slow: they start `imap-mcp serve`) show end to end;
and the bound on built apps (`IMAP_MCP_MAX_BUILT_ACCOUNTS`, `serving.built`).

The app is the one `imap-mcp serve` runs with an accounts file (`accounts_http_app`), driven over ASGI with its
lifespan running; its mailboxes are real Dovecot users.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from harness import (
    ALICE_TOKEN,
    BOB_TOKEN,
    Account,
    accounts_env,
    fresh_message,
    message_ids,
    new_account,
)
from in_process import call, result_of, serving, structured
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette

from imap_mcp.server.accounts.loading import Account as FileAccount
from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.serving import account_routing as routing
from imap_mcp.server.serving import accounts as serving_module
from imap_mcp.server.serving.built import DEFAULT_MAX_BUILT, BuiltApps, ServedAccount, load_max_built
from imap_mcp.server.serving.http_access import HttpSettings
from imap_mcp.server.serving.transports import sdk_http_app
from imap_mcp.server.setting_values import ConfigError

pytestmark = pytest.mark.anyio


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


# --- the bound on built apps ------------------------------------------------------------------------------


@dataclass
class Lifespans:
    """The account apps the server built, and how many of them ran their lifespan at once, at most."""

    built: int = 0
    running: int = 0
    most: int = 0


def count_lifespans(monkeypatch: pytest.MonkeyPatch) -> Lifespans:
    """Counts every account app `accounts_http_app` builds, and its lifespan while it runs."""
    seen = Lifespans()

    def counted(mcp: MCPServer, settings: HttpSettings) -> Starlette:
        app = sdk_http_app(mcp, settings)
        inner = app.router.lifespan_context

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[Any]:
            seen.running += 1
            seen.most = max(seen.most, seen.running)
            try:
                async with inner(app) as state:
                    yield state
            finally:
                seen.running -= 1

        app.router.lifespan_context = lifespan
        seen.built += 1
        return app

    monkeypatch.setattr(serving_module, "sdk_http_app", counted)
    return seen


@pytest.mark.parametrize("value", ["0", "-1", "many", "1.5"])
def test_a_bad_bound_on_built_apps_is_refused_by_name(value: str) -> None:
    with pytest.raises(ConfigError, match=f"^IMAP_MCP_MAX_BUILT_ACCOUNTS={value!r} is not valid: use the number"):
        load_max_built({"IMAP_MCP_MAX_BUILT_ACCOUNTS": value})
    assert load_max_built({}) == DEFAULT_MAX_BUILT and load_max_built({"IMAP_MCP_MAX_BUILT_ACCOUNTS": " 7 "}) == 7


def token_of(index: int) -> str:
    return f"account-{index}-token-0123456789abcdef"


def many_accounts_env(tmp_path: Path, accounts: list[Account], **extra: str) -> dict[str, str]:
    """The environment of a server for `accounts` (the i-th reached with `token_of(i)`), plus `extra`."""
    path = tmp_path / "accounts.toml"
    path.write_text(
        "".join(
            f'[accounts.a{i}]\nauth_tokens = ["{token_of(i)}"]\nIMAP_USERNAME = "{account.username}"\n'
            for i, account in enumerate(accounts)
        )
    )
    path.chmod(0o600)
    env = accounts[0].env()
    del env["IMAP_USERNAME"]
    return {**env, "IMAP_MCP_ACCOUNTS_FILE": str(path), **extra}


async def test_more_accounts_than_the_cap_are_served_in_turn_with_at_most_the_cap_built(
    dovecot: Dovecot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lifespans = count_lifespans(monkeypatch)
    accounts = [new_account(dovecot) for _ in range(3)]
    async with serving(many_accounts_env(tmp_path, accounts, IMAP_MCP_MAX_BUILT_ACCOUNTS="2")) as client:
        reached = [(await account_reached(client, token_of(i)))[1] for i in (0, 1, 2, 0, 1, 2)]
        # the least recently used goes: 2 then 1 were used last, so 0 comes back and 1 stays built
        again = [(await account_reached(client, token_of(i)))[1] for i in (1, 2)]
    assert reached == [account.username for account in accounts * 2]
    assert again == [accounts[1].username, accounts[2].username]
    assert lifespans.most == 2 and lifespans.built == 6 and lifespans.running == 0


def served_without_mail(account: FileAccount) -> ServedAccount:
    """The account served by an empty app: what is built does not matter here, only when."""
    return ServedAccount(account, lambda: ImapPool(account.settings.imap), lambda *_: Starlette())


async def test_an_app_with_a_request_running_is_never_evicted(dovecot: Dovecot, tmp_path: Path) -> None:
    """With room for one app, a request for another account waits until the running one ends; then the idle app
    goes."""
    alice, bob = load_accounts(accounts_env(tmp_path, new_account(dovecot), new_account(dovecot))).accounts
    first, second = served_without_mail(alice), served_without_mail(bob)
    built = BuiltApps(cap=1)
    events: list[str] = []
    release = anyio.Event()
    async with anyio.create_task_group() as lifespans:

        async def first_request(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            async with built.app_of(first, lifespans) as app:
                assert app is not None
                task_status.started()
                await release.wait()
                events.append("first's request ended")

        async def second_request() -> None:
            async with built.app_of(second, lifespans) as app:
                assert app is not None
                events.append(f"second served; first built: {first.built}")

        async with anyio.create_task_group() as requests:
            await requests.start(first_request)
            requests.start_soon(second_request)
            await anyio.wait_all_tasks_blocked()
            waiting = (first.built, second.built, list(events))
            release.set()
        first.stop()
        second.stop()
    assert waiting == (True, False, [])
    assert events == ["first's request ended", "second served; first built: False"]


async def test_an_evicted_accounts_pending_answer_runs_once_on_its_rebuilt_app(
    dovecot: Dovecot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question was sealed by alice's first app; bob's request evicts it; the answer reaches a new app and
    runs, once."""
    lifespans = count_lifespans(monkeypatch)
    alice, bob = new_account(dovecot), new_account(dovecot)
    victim = fresh_message(alice, "evicted while asking")
    env = {**accounts_env(tmp_path, alice, bob), "IMAP_MCP_MAX_BUILT_ACCOUNTS": "1"}
    dialog: dict[str, Any] = {"elicitation": {"form": {}}}
    async with serving(env) as client:
        asked = result_of(await call(client, ALICE_TOKEN, "delete_messages", {"ids": [victim]}, dialog))
        await account_reached(client, BOB_TOKEN)
        answers = {key: {"action": "accept", "content": {"approve": True}} for key in asked["inputRequests"]}
        answer = {"inputResponses": answers, "requestState": asked["requestState"]}
        done = structured(await call(client, ALICE_TOKEN, "delete_messages", {"ids": [victim]}, dialog, **answer))
        await call(client, ALICE_TOKEN, "delete_messages", {"ids": [victim]}, dialog, **answer)
    assert asked["resultType"] == "input_required" and lifespans.built == 3
    assert done["status"] == "done" and done["ids"] == [victim]
    assert victim not in message_ids(alice, "INBOX") and len(message_ids(alice, "Trash")) == 1
