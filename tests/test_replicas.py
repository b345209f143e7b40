"""Two imap-mcp processes behind a real round-robin nginx: any instance answers any request."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from harness import Account, answer, first_round, http_server, inbox_uids
from load_balancer import round_robin
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult

from imap_mcp.server.imap.message_ids import MessageRef

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

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
                assert result.structured_content["mailboxes"][0]["name"] == "INBOX"
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


# --- guarded changes across replicas ----------------------------------------------------------------------

OTHER_KEYS = "k9-" + "c" * 40


def inbox_ref(account: Account, position: int = 0) -> MessageRef:
    """The id of one INBOX message, straight from IMAP."""
    client = account.imap()
    try:
        uidvalidity = client.select_folder("INBOX", readonly=True)[b"UIDVALIDITY"]
        return MessageRef("INBOX", uidvalidity, sorted(client.search(["ALL"]))[position])
    finally:
        client.logout()


async def ask(client: Client, ref: MessageRef, **extra: Any) -> InputRequiredResult | CallToolResult:
    return await first_round(client, "delete_messages", {"ids": [ref.id], **extra})


async def approve(
    client: Client, ref: MessageRef, question: InputRequiredResult
) -> InputRequiredResult | CallToolResult:
    """The retry carrying the person's yes to deleting `ref`."""
    return await answer(client, "delete_messages", {"ids": [ref.id]}, question.request_state)


def last_two_upstreams(access_log: Path) -> list[str]:
    return [line.split()[0] for line in access_log.read_text().splitlines() if line.strip()][-2:]


def elicitation_caps() -> dict[str, Any]:
    async def unused(context: Any, params: Any) -> ElicitResult:  # never called: the test answers itself
        raise AssertionError("the test drives the dialog by hand")

    return {"elicitation_callback": unused}


async def test_a_dialog_asked_by_one_replica_is_answered_on_the_other(account: Account) -> None:
    env = account.env(IMAP_MCP_SEAL_KEYS=SHARED_KEYS)
    ref = inbox_ref(account)
    with two_replicas(env, env) as (url, access_log):
        async with Client(url, mode="2026-07-28", **elicitation_caps()) as client:
            question = await ask(client, ref)
            assert isinstance(question, InputRequiredResult)
            done = await approve(client, ref, question)
            first, second = last_two_upstreams(access_log)
    assert first != second  # question and answer were handled by different processes
    assert isinstance(done, CallToolResult) and not done.is_error, done
    assert done.structured_content["status"] == "done"
    assert ref.uid not in inbox_uids(account)


async def test_the_two_call_token_works_across_replicas(account: Account) -> None:
    env = account.env(IMAP_MCP_SEAL_KEYS=SHARED_KEYS)
    ref = inbox_ref(account)
    with two_replicas(env, env) as (url, access_log):
        async with Client(url, mode="2026-07-28") as client:  # declares no elicitation
            first_call = await ask(client, ref)
            assert isinstance(first_call, CallToolResult) and not first_call.is_error
            token = first_call.structured_content["confirm_token"]
            assert ref.uid in inbox_uids(account)  # the first call changed nothing
            second_call = await ask(client, ref, confirm_token=token)
            first, second = last_two_upstreams(access_log)
    assert first != second
    assert isinstance(second_call, CallToolResult) and not second_call.is_error, second_call
    assert second_call.structured_content["status"] == "done"
    assert ref.uid not in inbox_uids(account)


async def test_replicas_with_different_keys_ask_again_instead_of_failing(account: Account) -> None:
    ref = inbox_ref(account)
    env_a = account.env(IMAP_MCP_SEAL_KEYS=SHARED_KEYS)
    env_b = account.env(IMAP_MCP_SEAL_KEYS=OTHER_KEYS)
    with http_server(env_a) as url_a, http_server(env_b) as url_b:
        async with Client(url_a, mode="2026-07-28", **elicitation_caps()) as on_a:
            question = await ask(on_a, ref)
        async with Client(url_b, mode="2026-07-28", **elicitation_caps()) as on_b:
            retry = await approve(on_b, ref, question)  # type: ignore[arg-type]
    assert isinstance(retry, InputRequiredResult)  # a fresh question: not an error, not an execution
    assert retry.request_state and retry.request_state != question.request_state  # type: ignore[union-attr]
    assert ref.uid in inbox_uids(account)


async def test_key_rotation_keeps_a_dialog_in_flight_valid(account: Account) -> None:
    """Rollout step 2 of old,new → new,old → new: a question sealed with `old` opens after the switch."""
    old, new = "old-" + "d" * 40, "new-" + "e" * 40
    ref = inbox_ref(account)
    with http_server(account.env(IMAP_MCP_SEAL_KEYS=f"{old},{new}")) as before:
        async with Client(before, mode="2026-07-28", **elicitation_caps()) as client:
            question = await ask(client, ref)
    with http_server(account.env(IMAP_MCP_SEAL_KEYS=f"{new},{old}")) as after:
        async with Client(after, mode="2026-07-28", **elicitation_caps()) as client:
            done = await approve(client, ref, question)  # type: ignore[arg-type]
    assert isinstance(done, CallToolResult) and not done.is_error, done
    assert ref.uid not in inbox_uids(account)


async def test_a_restarted_process_honours_the_answer(account: Account) -> None:
    env = account.env(IMAP_MCP_SEAL_KEYS=SHARED_KEYS)
    ref = inbox_ref(account)
    with http_server(env) as url:
        async with Client(url, mode="2026-07-28", **elicitation_caps()) as client:
            question = await ask(client, ref)
    # the process is gone; a new one with the same keys gets the answer
    with http_server(env) as url:
        async with Client(url, mode="2026-07-28", **elicitation_caps()) as client:
            done = await approve(client, ref, question)  # type: ignore[arg-type]
    assert isinstance(done, CallToolResult) and not done.is_error, done
    assert ref.uid not in inbox_uids(account)


async def test_an_approval_obtained_with_one_token_does_not_run_for_another(account: Account) -> None:
    """The HTTP principal (a digest of the bearer token) is bound into every seal: each step is checked as it
    happens, on a message of its own, so a broken binding fails an assertion here, not a later call."""
    token_a, token_b = "caller-a-" + "1" * 24, "caller-b-" + "2" * 24
    env = account.env(IMAP_MCP_SEAL_KEYS=SHARED_KEYS, IMAP_MCP_AUTH_TOKENS=f"{token_a},{token_b}")
    by_dialog, by_token = inbox_ref(account, 0), inbox_ref(account, 1)
    with http_server(env) as url:
        async with authorized_client(url, token_a, dialog=True) as as_a:
            question = await ask(as_a, by_dialog)
        assert isinstance(question, InputRequiredResult)
        async with authorized_client(url, token_b, dialog=True) as as_b:
            retry = await approve(as_b, by_dialog, question)
        assert isinstance(retry, InputRequiredResult), retry  # a fresh question for B; nothing ran
        assert by_dialog.uid in inbox_uids(account)
        # the token path too: A's confirm_token does not run for B
        async with authorized_client(url, token_a, dialog=False) as as_a:
            issued = await ask(as_a, by_token)
        assert isinstance(issued, CallToolResult) and issued.structured_content is not None, issued
        async with authorized_client(url, token_b, dialog=False) as as_b:
            refused = await ask(as_b, by_token, confirm_token=issued.structured_content["confirm_token"])
    assert isinstance(refused, CallToolResult) and refused.is_error
    said = refused.content[0].text  # type: ignore[union-attr]
    assert "does not fit" in said and "Call delete_messages again without confirm_token to get a new one" in said
    assert by_token.uid in inbox_uids(account)


@contextlib.asynccontextmanager
async def authorized_client(url: str, token: str, dialog: bool) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http,
        Client(
            streamable_http_client(url, http_client=http), mode="2026-07-28", **(elicitation_caps() if dialog else {})
        ) as client,
    ):
        yield client
