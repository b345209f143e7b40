"""Two Dovecot users behind one `imap-mcp serve`, chosen by bearer token; approvals and slow servers stay apart."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import anyio
import httpx
import pytest
from harness import (
    ALICE_TOKEN,
    ANY_USER_PASSWORD,
    BOB_TOKEN,
    READ_TOOLS,
    accounts_env,
    append_message,
    client_as,
    error_text,
    http_server,
    inbox_uids,
    new_account,
    seeded_account,
    structured,
    tool_names,
)
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult, InputResponses

from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

YES: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}


def mail(subject: str) -> bytes:
    message = EmailMessage()
    message["From"] = "someone@example.org"
    message["To"] = "you@example.org"
    message["Subject"] = subject
    message.set_content("hello")
    return bytes(message)


async def subjects_in_inbox(client: Client) -> list[str]:
    page = structured(await client.call_tool("search_messages", {"mailbox": "INBOX", "limit": 100}))
    return [m["subject"] for m in page["messages"]]


def list_tools_status(url: str, headers: dict[str, str]) -> int:
    """The HTTP status of a plain 2026-07-28 tools/list with `headers`."""
    version = "2026-07-28"
    meta = {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    base = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
        "mcp-method": "tools/list",
    }
    return httpx.post(url, headers={**base, **headers}, json=body, timeout=30).status_code


async def test_each_token_reaches_only_its_own_mailbox(dovecot: Dovecot, tmp_path: Path) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    append_message(alice, mail("for alice only"))
    append_message(bob, mail("for bob only"))
    with http_server(accounts_env(tmp_path, alice, bob)) as url:
        async with client_as(url, ALICE_TOKEN) as as_alice, client_as(url, BOB_TOKEN) as as_bob:
            seen_by_alice, seen_by_bob = await subjects_in_inbox(as_alice), await subjects_in_inbox(as_bob)
            info_alice = structured(await as_alice.call_tool("get_server_info", {}))
            info_bob = structured(await as_bob.call_tool("get_server_info", {}))
        refused = [list_tools_status(url, {}), list_tools_status(url, {"authorization": "Bearer not-of-an-account"})]
    assert seen_by_alice == ["for alice only"] and seen_by_bob == ["for bob only"]
    assert (info_alice["account"]["name"], info_alice["account"]["login"]) == ("alice", alice.username)
    assert (info_bob["account"]["name"], info_bob["account"]["login"]) == ("bob", bob.username)
    assert ALICE_TOKEN not in str(info_alice) and BOB_TOKEN not in str(info_bob)
    assert refused == [401, 401]


async def test_policy_per_account_changes_the_list_and_what_can_be_called(dovecot: Dovecot, tmp_path: Path) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = accounts_env(tmp_path, alice, bob, 'IMAP_MCP_DISABLE_TOOLS = "delete_messages"', "IMAP_MCP_READ_ONLY = true")
    with http_server(env) as url:
        async with client_as(url, ALICE_TOKEN) as as_alice, client_as(url, BOB_TOKEN) as as_bob:
            alice_tools, bob_tools = await tool_names(as_alice), await tool_names(as_bob)
            listed = (await as_alice.list_tools()).tools
            with pytest.raises(MCPError) as not_for_bob:
                await as_bob.call_tool("move_messages", {"ids": ["x"], "destination": "Archive"})
            with pytest.raises(MCPError) as not_for_alice:
                await as_alice.call_tool("delete_messages", {"ids": ["x"]})
            info = structured(await as_bob.call_tool("get_server_info", {}))
        async with client_as(url, BOB_TOKEN, mode="legacy") as bob_in_a_session:  # 2025-11-25: a session
            bob_session_tools = await tool_names(bob_in_a_session)
            with pytest.raises(MCPError) as not_in_bobs_session:
                await bob_in_a_session.call_tool("move_messages", {"ids": ["x"], "destination": "Archive"})
    assert "delete_messages" not in alice_tools and "move_messages" in alice_tools
    assert bob_tools == bob_session_tools == READ_TOOLS
    assert not [tool.name for tool in listed if "account" in tool.input_schema.get("properties", {})]
    refusals = [(not_for_bob, "move_messages"), (not_for_alice, "delete_messages")]
    for refused, name in [*refusals, (not_in_bobs_session, "move_messages")]:
        assert refused.value.code == -32602 and f"Unknown tool: {name}" in refused.value.message
    assert info["tools"]["offered"] == READ_TOOLS and info["tools"]["read_only"] is True
    reasons = {item["name"]: item["reason"] for item in info["tools"]["not_offered"]}
    assert "IMAP_MCP_READ_ONLY=true" in reasons["move_messages"]
    assert reasons["send_message"] == "SMTP_HOST is not set"


async def never_asked(context: object, params: object) -> object:
    raise AssertionError("the rounds are driven by hand")


async def test_an_approval_for_one_account_never_runs_on_another(dovecot: Dovecot, tmp_path: Path) -> None:
    """The same arguments name a message in either INBOX (same sample mail, same UIDs); one seal key for both.

    So nothing but the account (and the caller's principal) in the seal tells the two apart.
    """
    alice, bob = seeded_account(dovecot), seeded_account(dovecot)
    by_token, by_dialog = ({"mailbox": "INBOX", "uids": [uid], "permanent": True} for uid in (1, 2))
    assert sorted(inbox_uids(alice))[:2] == sorted(inbox_uids(bob))[:2] == [1, 2]
    env = {**accounts_env(tmp_path, alice, bob), "IMAP_MCP_SEAL_KEYS": "k" * 40}
    log_path = tmp_path / "server.log"
    with http_server(env, log_path=log_path) as url:
        # the token path: alice's confirm_token, sent with bob's bearer token
        async with client_as(url, ALICE_TOKEN) as as_alice, client_as(url, BOB_TOKEN) as as_bob:
            asked = structured(await as_alice.call_tool("delete_messages", by_token))
            with_token = {**by_token, "confirm_token": asked["confirm_token"]}
            on_bob = error_text(await as_bob.call_tool("delete_messages", with_token))
            on_alice = structured(await as_alice.call_tool("delete_messages", with_token))
        # the dialog path: alice's sealed requestState and an accepting answer, sent with bob's bearer token
        async with (
            client_as(url, ALICE_TOKEN, elicitation_callback=never_asked) as as_alice,
            client_as(url, BOB_TOKEN, elicitation_callback=never_asked) as as_bob,
        ):
            question = await as_alice.session.call_tool("delete_messages", by_dialog, allow_input_required=True)
            assert isinstance(question, InputRequiredResult)
            state = question.request_state
            replayed = await as_bob.session.call_tool(
                "delete_messages", by_dialog, allow_input_required=True, input_responses=YES, request_state=state
            )
            approved = await as_alice.session.call_tool(
                "delete_messages", by_dialog, allow_input_required=True, input_responses=YES, request_state=state
            )
    assert asked["status"] == "confirmation_required"
    assert "does not fit this call" in on_bob and "Nothing was changed" in on_bob
    assert isinstance(replayed, InputRequiredResult)  # asked afresh, nothing ran
    assert on_alice["status"] == "done" and structured(approved)["status"] == "done"
    assert {1, 2} <= inbox_uids(bob)
    assert not {1, 2} & inbox_uids(alice)
    log = log_path.read_text()  # the start lines and the refusal name the accounts, never a secret
    assert f"account alice: {alice.username} on 127.0.0.1" in log and f"account bob: {bob.username} on" in log
    assert f"confirm_token for delete_messages on {bob.username}@127.0.0.1:{bob.server.tls_port} refused" in log
    for secret in (ALICE_TOKEN, BOB_TOKEN, ANY_USER_PASSWORD, "k" * 40, asked["confirm_token"]):
        assert secret not in log


class SilentServer:
    """A loopback listener that accepts connections and never says a word (an IMAP server that hangs).

    `accepted` holds imap-mcp's IMAP connections. A connection that sends a TLS ClientHello at once is imap-mcp
    asking, a second after a greeting did not come, whether the port speaks TLS (`server.tls_mismatch`): one
    more connection for at most a second, outside the pool, kept apart in `probes`."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.probes: list[socket.socket] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self._listener.accept()
                threading.Thread(target=self._sort, args=(connection,), daemon=True).start()

    def _sort(self, connection: socket.socket) -> None:
        readable, _, _ = select.select([connection], [], [], 0.5)
        probe = False
        with contextlib.suppress(OSError):  # one already closed by its client is no probe
            probe = bool(readable) and connection.recv(1, socket.MSG_PEEK) == b"\x16"
        with self._changed:
            (self.probes if probe else self.accepted).append(connection)
            self._changed.notify_all()

    def wait_for(self, count: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.accepted) >= count, timeout=120)

    def close(self) -> None:
        """Stop listening (shutdown wakes the blocked accept) and hang up every connection."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._changed:
            for connection in self.accepted + self.probes:
                connection.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


async def call_over_http(http: httpx.AsyncClient, url: str, token: str, tool: str) -> str:
    """A 2026-07-28 tools/call POST of `tool` without arguments; the response body as text."""
    version = "2026-07-28"
    meta = {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": meta}}
    headers = {
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": version,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    return (await http.post(url, headers=headers, json=body)).text


async def test_a_silent_server_of_one_account_does_not_hold_up_another(
    dovecot: Dovecot, tmp_path: Path, silent_server: SilentServer
) -> None:
    """Alice's server never answers; more calls than her pool's bound wait on it, and bob is served meanwhile."""
    alice, bob = new_account(dovecot), new_account(dovecot)
    hung = f'IMAP_PORT = {silent_server.port}\nIMAP_TLS = "none"\nIMAP_TIMEOUT = 600'
    answers_to_alice: list[str] = []
    with http_server(accounts_env(tmp_path, alice, bob, alice_extra=hung)) as url:
        async with httpx.AsyncClient(timeout=300) as http:

            async def alice_lists() -> None:
                answers_to_alice.append(await call_over_http(http, url, ALICE_TOKEN, "list_mailboxes"))

            async with anyio.create_task_group() as group:
                for _ in range(6):
                    group.start_soon(alice_lists)
                await anyio.to_thread.run_sync(silent_server.wait_for, 4)  # her pool's bound: 4 connections
                answer_to_bob = await call_over_http(http, url, BOB_TOKEN, "list_mailboxes")
                finished, connections = len(answers_to_alice), len(silent_server.accepted)
                silent_server.close()  # now alice's calls fail
    assert '"name":"INBOX"' in answer_to_bob.replace(" ", "") and '"isError":false' in answer_to_bob
    assert finished == 0 and connections == 4
    assert len(answers_to_alice) == 6 and all('"isError":true' in a for a in answers_to_alice)


async def test_all_accounts_together_hold_at_most_the_total_connections(
    dovecot: Dovecot, tmp_path: Path, silent_server: SilentServer
) -> None:
    """IMAP_MCP_MAX_CONNECTIONS=5: alice's silent server holds 4, so bob's three calls to his (silent too) get one
    connection between them; once alice's connections end, bob's other calls get theirs."""
    alice, bob = new_account(dovecot), new_account(dovecot)
    bobs_server = SilentServer()
    silent = '\nIMAP_TLS = "none"\nIMAP_TIMEOUT = 600'
    env = accounts_env(
        tmp_path,
        alice,
        bob,
        alice_extra=f"IMAP_PORT = {silent_server.port}{silent}",
        bob_extra=f"IMAP_PORT = {bobs_server.port}{silent}",
    )
    answers: list[str] = []
    try:
        with http_server({**env, "IMAP_MCP_MAX_CONNECTIONS": "5"}) as url:
            async with httpx.AsyncClient(timeout=300) as http:

                async def lists(token: str) -> None:
                    answers.append(await call_over_http(http, url, token, "list_mailboxes"))

                async with anyio.create_task_group() as group:
                    for _ in range(4):
                        group.start_soon(lists, ALICE_TOKEN)
                    await anyio.to_thread.run_sync(silent_server.wait_for, 4)
                    for _ in range(3):
                        group.start_soon(lists, BOB_TOKEN)
                    await anyio.to_thread.run_sync(bobs_server.wait_for, 1)
                    await anyio.sleep(2)  # time for bob's other calls to connect, were they allowed to
                    while_alice_holds_four = len(bobs_server.accepted)
                    silent_server.close()  # alice's calls fail and give their connections back
                    await anyio.to_thread.run_sync(bobs_server.wait_for, 3)
                    bobs_server.close()
    finally:
        bobs_server.close()
    assert while_alice_holds_four == 1
    assert len(silent_server.accepted) == 4 and len(bobs_server.accepted) == 3
    assert len(answers) == 7 and all('"isError":true' in a for a in answers)
