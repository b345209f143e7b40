"""Who may do what, by OAuth access token, in this process: the scopes a token grants choose the tools it sees and
may call; its subject chooses the one mailbox it reaches (an accounts file's `oauth_subjects`); an approval is bound
to the subject that obtained it.

The app is the one `imap-mcp serve` runs (`accounts_http_app`), its mailboxes real Dovecot users; the tokens are
minted by the test against a key set it serves on loopback (`issuer`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import ALICE_TOKEN, Account, accounts_env, new_account
from in_process import VERSION, call, result_of, serving_app, structured
from issuer import RESOURCE, Issuer, serving_issuer

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.authorization.scopes import SCOPE_OF
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.serving.accounts import accounts_http_app
from imap_mcp.server.setting_values import ConfigError

pytestmark = pytest.mark.anyio


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with serving_issuer() as served:
        yield served


def serving(env: dict[str, str]) -> Any:
    return serving_app(accounts_http_app(load_accounts(env), env))


def oauth(env: dict[str, str], issuer: Issuer, **extra: str) -> dict[str, str]:
    return {**env, "IMAP_MCP_OAUTH_ISSUER": issuer.url, "IMAP_MCP_OAUTH_AUDIENCE": RESOURCE, **extra}


async def tools_listed(client: httpx.AsyncClient, token: str) -> set[str]:
    meta = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/list",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    answer = await client.post("/mcp", headers=headers, json=body)
    return {tool["name"] for tool in result_of(answer)["tools"]}


def mailbox_exists(account: Account, name: str) -> bool:
    connection = account.imap()
    try:
        return bool(connection.folder_exists(name))
    finally:
        connection.logout()


async def test_a_token_lists_and_calls_only_the_tools_its_scopes_cover(account: Account, issuer: Issuer) -> None:
    name = f"Scoped-{uuid.uuid4().hex[:8]}"
    create = {"action": "create", "mailbox": name}
    async with serving(oauth(account.env(), issuer)) as client:
        reader = issuer.token(scope="mail.read")
        listed = await tools_listed(client, reader)
        refused = await call(client, reader, "manage_mailbox", create)
        not_created = not mailbox_exists(account, name)
        everything = await tools_listed(client, issuer.token())
        allowed = structured(await call(client, issuer.token(scope="mail.read mail.change"), "manage_mailbox", create))
    assert listed == {tool for tool, scope in SCOPE_OF.items() if scope == "mail.read"}
    assert "manage_mailbox" in everything and listed < everything
    assert refused.status_code == 403 and "needs the scope mail.change" in refused.text
    assert refused.headers["www-authenticate"].startswith(
        'Bearer error="insufficient_scope", scope="mail.read mail.change"'
    )
    assert not_created
    assert allowed["status"] == "done" and mailbox_exists(account, name)


async def test_on_the_2025_path_a_call_outside_the_scopes_is_refused_before_it_runs(
    account: Account, issuer: Issuer
) -> None:
    """There the call is in the body only: the SDK middleware refuses it (-32602), naming the scope."""
    name = f"Legacy-{uuid.uuid4().hex[:8]}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "manage_mailbox", "arguments": {"action": "create", "mailbox": name}},
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with serving(oauth(account.env(IMAP_MCP_LEGACY_HTTP="stateless"), issuer)) as client:
        token = issuer.token(scope="mail.read")
        answer = await client.post("/mcp", headers={**headers, "authorization": f"Bearer {token}"}, json=body)
    assert "needs the scope mail.change" in answer.text, answer.text
    assert not mailbox_exists(account, name)


def test_each_tool_needs_the_scope_its_kind_says() -> None:
    assert SCOPE_OF["get_message"] == SCOPE_OF["get_server_info"] == "mail.read"
    assert SCOPE_OF["delete_messages"] == SCOPE_OF["save_draft"] == SCOPE_OF["list_new_messages"] == "mail.change"
    assert SCOPE_OF["send_message"] == SCOPE_OF["forward_message"] == "mail.send"
    assert SCOPE_OF["set_webhook_enabled"] == SCOPE_OF["get_webhook_status"] == "mail.webhooks"


async def test_each_subject_reaches_only_its_own_mailbox(dovecot: Dovecot, tmp_path: Path, issuer: Issuer) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = oauth(
        accounts_env(tmp_path, alice, bob, 'oauth_subjects = ["alice-sub"]', 'oauth_subjects = ["bob-sub"]'), issuer
    )
    async with serving(env) as client:
        reached = [
            structured(await call(client, issuer.token(sub=subject), "get_server_info"))["account"]["login"]
            for subject in ("alice-sub", "bob-sub", "alice-sub")
        ]
        stranger = await call(client, issuer.token(sub="carol-sub"), "get_server_info")
        static = structured(await call(client, ALICE_TOKEN, "get_server_info"))["account"]["login"]
    assert reached == [alice.username, bob.username, alice.username]
    assert stranger.status_code == 403 and "oauth_subjects" in stranger.text
    assert static == alice.username


async def test_the_operator_may_name_another_claim(dovecot: Dovecot, tmp_path: Path, issuer: Issuer) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = accounts_env(tmp_path, alice, bob, 'oauth_subjects = ["alice@example.com"]', 'oauth_subjects = ["bob-sub"]')
    env = oauth(env, issuer, IMAP_MCP_OAUTH_SUBJECT_CLAIM="email")
    async with serving(env) as client:
        by_email = await call(client, issuer.token(sub="anything", email="alice@example.com"), "get_server_info")
        by_sub = await call(client, issuer.token(sub="bob-sub"), "get_server_info")
    assert structured(by_email)["account"]["login"] == alice.username
    assert by_sub.status_code == 403


async def test_an_approval_by_one_subject_does_not_act_for_another(
    dovecot: Dovecot, tmp_path: Path, issuer: Issuer
) -> None:
    """A shared mailbox two people reach: the two-call token one of them got runs nothing for the other."""
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = oauth(accounts_env(tmp_path, alice, bob, 'oauth_subjects = ["alice-sub", "assistant-sub"]'), issuer)
    name = f"Shared-{uuid.uuid4().hex[:8]}"
    connection = alice.imap()
    connection.create_folder(name)
    connection.logout()
    delete = {"action": "delete", "mailbox": name}
    async with serving(env) as client:
        asked = structured(await call(client, issuer.token(sub="alice-sub"), "manage_mailbox", delete))
        token = asked["confirm_token"]
        other = await call(
            client, issuer.token(sub="assistant-sub"), "manage_mailbox", {**delete, "confirm_token": token}
        )
        still_there = mailbox_exists(alice, name)
        own = structured(
            await call(client, issuer.token(sub="alice-sub"), "manage_mailbox", {**delete, "confirm_token": token})
        )
    assert token and still_there
    assert result_of(other)["isError"] is True
    assert own["status"] == "done" and not mailbox_exists(alice, name)


async def dialog_call(
    client: httpx.AsyncClient, token: str, arguments: dict[str, Any], answer: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A 2026-07-28 `manage_mailbox` call from a client that shows dialogs; with `answer`, the retry carrying the
    person's yes to it (every box ticked) and its request state. The JSON-RPC result."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    params: dict[str, Any] = {"name": "manage_mailbox", "arguments": arguments, "_meta": meta}
    if answer is not None:
        (key, asked), *_ = answer["inputRequests"].items()
        ticked = {name: True for name in asked["params"]["requestedSchema"]["properties"]}
        params["inputResponses"] = {key: {"action": "accept", "content": ticked}}
        params["requestState"] = answer["requestState"]
    headers = {
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "manage_mailbox",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return result_of(await client.post("/mcp", headers=headers, json=body))


async def test_a_dialog_answered_by_one_subject_does_not_act_for_another(
    dovecot: Dovecot, tmp_path: Path, issuer: Issuer
) -> None:
    """The dialog path (2026-07-28 input_required): a yes carried by another subject's request is no answer, so the
    question is asked again and nothing runs; carried by the subject who was asked, it runs."""
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = oauth(accounts_env(tmp_path, alice, bob, 'oauth_subjects = ["alice-sub", "assistant-sub"]'), issuer)
    name = f"Dialog-{uuid.uuid4().hex[:8]}"
    connection = alice.imap()
    connection.create_folder(name)
    connection.logout()
    delete = {"action": "delete", "mailbox": name}
    async with serving(env) as client:
        asked = await dialog_call(client, issuer.token(sub="alice-sub"), delete)
        replayed = await dialog_call(client, issuer.token(sub="assistant-sub"), delete, asked)
        still_there = mailbox_exists(alice, name)
        answered = await dialog_call(client, issuer.token(sub="alice-sub"), delete, asked)
    assert asked["resultType"] == "input_required"
    assert replayed["resultType"] == "input_required" and still_there
    assert answered["structuredContent"]["status"] == "done" and not mailbox_exists(alice, name)


def test_subjects_without_an_issuer_and_a_subject_in_two_accounts_are_refused(dovecot: Dovecot, tmp_path: Path) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    without_issuer = accounts_env(tmp_path, alice, bob, 'oauth_subjects = ["alice-sub"]')
    with pytest.raises(ConfigError, match="IMAP_MCP_OAUTH_ISSUER is not set"):
        accounts_http_app(load_accounts(without_issuer), without_issuer)
    twice = accounts_env(tmp_path, alice, bob, 'oauth_subjects = ["same"]', 'oauth_subjects = ["same"]')
    with pytest.raises(ConfigError, match="each person reaches one mailbox"):
        load_accounts(twice)
