"""Faults between imap-mcp and its servers, injected at exact bytes by `fault_proxy.FaultProxy`.

imap-mcp talks plain TCP to the proxy (IMAP_TLS=none on loopback), the proxy to the real
Dovecot or aiosmtpd. After each run a census of Message-IDs over every mailbox checks that
nothing was lost and nothing duplicated.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest
from fault_proxy import Fault, FaultProxy
from harness import Account, Person, error_text, message_ids, pool_without, structured
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import ElicitResult, InputRequiredResult

from imap_mcp.server.app import build_server
from imap_mcp.server.config import ImapSettings, Settings
from imap_mcp.server.imap.pool import ImapPool

pytestmark = pytest.mark.anyio

#: the overall per-operation deadline the tests run with (IMAP_TIMEOUT)
DEADLINE = 2.0
#: no test here should get anywhere near this; it only turns a hang into a failure
HANG_GUARD = 60


def proxied(account: Account, proxy: FaultProxy, timeout: float = DEADLINE) -> ImapSettings:
    """Settings that reach `account` through `proxy`, in plain text so the proxy sees every byte."""
    return dataclasses.replace(account.imap_settings("none"), port=proxy.port, timeout=timeout)


@contextlib.contextmanager
def through_proxy(account: Account) -> Iterator[FaultProxy]:
    with FaultProxy(account.dovecot.port) as proxy:
        yield proxy


#: what the Message-ID of every claim imap-mcp files while a change runs ends with
CLAIM = "@imap-mcp.invalid>"


def census(account: Account, claims: bool = False) -> Counter[str]:
    """How many messages carry each Message-ID, over every mailbox of the account (claims only if asked)."""
    client = account.imap()
    counts: Counter[str] = Counter()
    try:
        for flags, _, name in client.list_folders():
            if {b"\\Noselect", b"\\NonExistent"} & set(flags):
                continue
            client.select_folder(name, readonly=True)
            uids = client.search(["ALL"])
            for data in client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]).values():
                header = next(v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS"))
                message_id = header.decode().split(":", 1)[-1].strip()
                if claims or not message_id.endswith(CLAIM):
                    counts[message_id] += 1
    finally:
        client.logout()
    return counts


async def test_a_server_trickling_its_answer_is_stopped_at_the_overall_deadline(account: Account) -> None:
    """One byte every 0.2 s keeps each read under its timeout; the operation as a whole is bounded."""
    with through_proxy(account) as proxy:
        pool = ImapPool(proxied(account, proxy))
        proxy.inject(Fault(b"FETCH (UID", "trickle", interval=0.2))
        with anyio.fail_after(HANG_GUARD):
            async with Client(build_server(Settings(imap=pool.settings), pool=pool)) as c:
                text = error_text(await c.call_tool("search_messages", {}))
                after = structured(await c.call_tool("search_messages", {}))
        pool.close_all()
    assert "IMAP_TIMEOUT (2 s)" in text
    assert len(after["messages"]) == len(message_ids(account, "INBOX"))  # the next call runs on a fresh connection


async def test_a_server_stalling_in_its_greeting_is_stopped_at_the_overall_deadline(account: Account) -> None:
    with through_proxy(account) as proxy:
        pool = ImapPool(proxied(account, proxy))
        proxy.inject(Fault(b"* OK", "trickle", interval=0.2))
        with anyio.fail_after(HANG_GUARD):
            async with Client(build_server(Settings(imap=pool.settings), pool=pool)) as c:
                text = error_text(await c.call_tool("list_mailboxes", {}))
        pool.close_all()
    assert "IMAP_TIMEOUT" in text


# --- one approval, one change: concurrent answers, and a replay after a cut ---

YES = {"approval": ElicitResult(action="accept", content={"approve": True})}
CONCURRENT = 4


async def _answered_at_once(server: MCPServer, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """One dialog asked, then the same answer sent CONCURRENT times at once (as a retrying client would)."""
    async with Client(server, mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await client.session.call_tool(tool, arguments, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        results: list[dict[str, Any]] = []

        async def answer() -> None:
            result = await client.session.call_tool(
                tool, arguments, allow_input_required=True, input_responses=YES, request_state=asked.request_state
            )
            # an answer that comes after the change ran finds none of the messages left: refused, nothing changed
            refused = result.is_error and "Nothing was changed" in result.content[0].text
            results.append({"status": "refused", "count": 0} if refused else structured(result))

        with anyio.fail_after(HANG_GUARD):
            async with anyio.create_task_group() as group:
                for _ in range(CONCURRENT):
                    group.start_soon(answer)
    return results


def _ran_once(results: list[dict[str, Any]], account: Account) -> dict[str, Any]:
    """The one result that did the change; every other attempt changed nothing, and no claim is left."""
    [done] = [r for r in results if r["status"] == "done"]
    assert all(r["count"] == 0 for r in results if r is not done), results
    assert not any(m.endswith(CLAIM) for m in census(account, claims=True))
    return done


async def test_concurrent_answers_to_one_approved_copy_copy_once(account: Account) -> None:
    ids = message_ids(account, "INBOX")[:5]
    before = census(account)
    server = build_server(account.settings())
    results = await _answered_at_once(server, "move_messages", {"ids": ids, "destination": "Archive", "mode": "copy"})
    assert _ran_once(results, account)["count"] == 5
    after = census(account)
    assert sum(after.values()) == sum(before.values()) + 5
    assert max(after.values()) == 2  # the five copied: once in INBOX, once in Archive


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        pytest.param("move_messages", {"destination": "Archive"}, id="move"),
        pytest.param("delete_messages", {}, id="trash"),
    ],
)
async def test_without_move_concurrent_answers_move_each_message_once(
    account: Account, tool: str, arguments: dict[str, Any]
) -> None:
    """The first COPY's answer trickles in, so every other answer runs while its messages are in both mailboxes."""
    ids = message_ids(account, "INBOX")[:5]
    before = census(account)
    with through_proxy(account) as proxy:
        proxy.inject(Fault(b"] Copy completed", "trickle", interval=0.1, until=b"\r\n"))
        pool = pool_without(account, ("MOVE",), settings=proxied(account, proxy, timeout=30))
        server = build_server(Settings(imap=pool.settings), pool=pool)  # type: ignore[attr-defined]
        results = await _answered_at_once(server, tool, {**arguments, "ids": ids})
        pool.close_all()  # type: ignore[attr-defined]
    assert _ran_once(results, account)["count"] == 5
    assert census(account) == before  # nothing lost, nothing twice
    assert not set(ids) & set(message_ids(account, "INBOX"))


async def _until_not_in_progress(call: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    """Repeat `call` while another (dead) attempt's claim is still live; its result once it ran."""
    with anyio.fail_after(HANG_GUARD):
        while True:
            result = structured(await call())
            if result["status"] != "in_progress":
                return result
            await anyio.sleep(0.5)


async def test_without_move_a_replay_after_a_cut_after_copy_completes_the_move(account: Account) -> None:
    ids = message_ids(account, "INBOX")[:3]
    before = census(account)
    with through_proxy(account) as proxy:
        pool = pool_without(account, ("MOVE",), settings=proxied(account, proxy))
        proxy.inject(Fault(b"] Copy completed", "cut"))
        arguments = {"ids": ids, "destination": "Archive"}
        server = build_server(Settings(imap=pool.settings), pool=pool)  # type: ignore[attr-defined]
        async with Client(server, mode="2026-07-28", elicitation_callback=Person()) as client:
            asked = await client.session.call_tool("move_messages", arguments, allow_input_required=True)
            assert isinstance(asked, InputRequiredResult)

            async def answer() -> Any:
                return await client.session.call_tool(
                    "move_messages", arguments, input_responses=YES, request_state=asked.request_state
                )

            assert "lost" in error_text(await answer())
            assert sum(census(account).values()) == sum(before.values()) + 3  # copied, not yet removed from INBOX
            replayed = await _until_not_in_progress(answer)
        pool.close_all()  # type: ignore[attr-defined]
    assert replayed["status"] == "done" and replayed["count"] == 3
    assert census(account, claims=True) == before  # the dead attempt's claim is gone too
    assert not set(ids) & set(message_ids(account, "INBOX"))
