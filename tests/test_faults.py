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
from pathlib import Path
from typing import Any

import anyio
import pytest
from fault_proxy import Fault, FaultProxy
from harness import Account, Person, error_text, message_id_counts, message_ids, pool_without, served, structured
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult, InputResponses, TextContent
from smtp_capture import SENDER, CaptureSMTP
from store_faults import KINDS, Kind, StoreFault, store_path

from imap_mcp.server.config import ImapSettings, Settings, load_settings
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.serving.app import build_server
from imap_mcp.server.store import database

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


def census(account: Account) -> Counter[str]:
    """How many messages carry each Message-ID, over every mailbox of the account."""
    client = account.imap()
    counts: Counter[str] = Counter()
    try:
        for flags, _, name in client.list_folders():
            if {b"\\Noselect", b"\\NonExistent"} & set(flags):
                continue
            counts.update(message_id_counts(client, name))
    finally:
        client.logout()
    return counts


async def test_a_server_trickling_its_answer_is_stopped_at_the_overall_deadline(account: Account) -> None:
    """One byte every 0.2 s keeps each read under its timeout; the operation as a whole is bounded."""
    with through_proxy(account) as proxy:
        pool = ImapPool(proxied(account, proxy))
        proxy.inject(Fault(b"FETCH (UID", "trickle", interval=0.2))
        with anyio.fail_after(HANG_GUARD):
            async with served(Settings(imap=pool.settings), pool=pool) as c:
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
            async with served(Settings(imap=pool.settings), pool=pool) as c:
                text = error_text(await c.call_tool("list_mailboxes", {}))
        pool.close_all()
    assert "IMAP_TIMEOUT" in text


def first_message_ids(account: Account, count: int) -> list[str]:
    """The Message-IDs of the first `count` messages in INBOX (those `message_ids(...)[:count]` name)."""
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        uids = sorted(client.search(["ALL"]))[:count]
        fetched = client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]).values()
        headers = [next(v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS")) for data in fetched]
        return [header.decode().split(":", 1)[-1].strip() for header in headers]
    finally:
        client.logout()


# --- one approval, one change: concurrent answers, and a replay after a cut ---

YES: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}
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
            assert isinstance(result, CallToolResult) and isinstance(result.content[0], TextContent)
            # an answer that comes after the change ran finds none of the messages left: refused, nothing changed
            refused = result.is_error and "Nothing was changed" in result.content[0].text
            results.append({"status": "refused", "count": 0} if refused else structured(result))

        with anyio.fail_after(HANG_GUARD):
            async with anyio.create_task_group() as group:
                for _ in range(CONCURRENT):
                    group.start_soon(answer)
    return results


def _ran_once(results: list[dict[str, Any]], account: Account) -> dict[str, Any]:
    """The one result that did the change; every other attempt changed nothing."""
    [done] = [r for r in results if r["status"] == "done"]
    assert all(r["count"] == 0 for r in results if r is not done), results
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
        server = build_server(Settings(imap=pool.settings), pool=pool)
        results = await _answered_at_once(server, tool, {**arguments, "ids": ids})
        pool.close_all()
    assert _ran_once(results, account)["count"] == 5
    assert census(account) == before  # nothing lost, nothing twice
    assert not set(ids) & set(message_ids(account, "INBOX"))


async def _until_not_in_progress(call: Callable[[], Awaitable[Any]], waiting: str = "in_progress") -> dict[str, Any]:
    """Repeat `call` while another (dead) attempt's claim is still live; its result once it ran."""
    with anyio.fail_after(HANG_GUARD):
        while True:
            result = structured(await call())
            if result["status"] != waiting:
                return result
            await anyio.sleep(0.5)


@pytest.mark.slow
async def test_without_move_a_replay_after_a_cut_after_copy_completes_the_move(account: Account) -> None:
    ids = message_ids(account, "INBOX")[:3]
    before = census(account)
    with through_proxy(account) as proxy:
        pool = pool_without(account, ("MOVE",), settings=proxied(account, proxy))
        proxy.inject(Fault(b"] Copy completed", "cut"))
        arguments = {"ids": ids, "destination": "Archive"}
        settings = Settings(imap=pool.settings)
        async with served(settings, pool=pool, mode="2026-07-28", elicitation_callback=Person()) as client:
            asked = await client.session.call_tool("move_messages", arguments, allow_input_required=True)
            assert isinstance(asked, InputRequiredResult)

            async def answer() -> Any:
                return await client.session.call_tool(
                    "move_messages", arguments, input_responses=YES, request_state=asked.request_state
                )

            assert "lost" in error_text(await answer())
            assert sum(census(account).values()) == sum(before.values()) + 3  # copied, not yet removed from INBOX
            replayed = await _until_not_in_progress(answer)
        pool.close_all()
    assert replayed["status"] == "done" and replayed["count"] == 3
    assert census(account) == before  # nothing lost, nothing twice
    assert not set(ids) & set(message_ids(account, "INBOX"))


# --- one approval, one send: a lost SMTP answer (tests/outgoing/test_send_once.py has the rest) ---

MESSAGE = {"to": ["alice@example.com"], "subject": "Lunch on Friday", "body": "Friday at noon?\n"}


def sent_flags(account: Account) -> list[set[bytes]]:
    """The flags (without \\Recent) of every message imap-mcp filed in Sent."""
    client = account.imap()
    try:
        client.select_folder("Sent", readonly=True)
        fetched = client.fetch(client.search(["HEADER", "Message-ID", ".imap-mcp@example.org>"]), ["FLAGS"]).values()
        return [set(found[b"FLAGS"]) - {b"\\Recent"} for found in fetched]
    finally:
        client.logout()


async def _answer_twice_then_until(
    server: MCPServer, first_check: Callable[[Any], None], waiting: str
) -> dict[str, Any]:
    """Ask once; the first answer is checked by `first_check`; then the same answer repeated until settled."""
    async with Client(server, mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await client.session.call_tool("send_message", MESSAGE, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)

        async def answer() -> Any:
            return await client.session.call_tool(
                "send_message", MESSAGE, input_responses=YES, request_state=asked.request_state
            )

        first_check(await answer())
        return await _until_not_in_progress(answer, waiting)


async def test_a_send_whose_smtp_answer_is_lost_is_not_sent_again_on_replay(account: Account) -> None:
    """The proxy holds everything the SMTP server says after its go-ahead for the data, so its 250 never arrives."""
    with CaptureSMTP(auth=(account.username, account.password)) as smtp, FaultProxy(smtp.port) as proxy:
        proxy.inject(Fault(b"354 End data with <CR><LF>.<CR><LF>\r\n", "stall"))
        env = account.env(**{**smtp.env(), "SMTP_PORT": str(proxy.port)}, SMTP_FROM=SENDER, SMTP_TIMEOUT="2")
        first: list[dict[str, Any]] = []
        replayed = await _answer_twice_then_until(
            build_server(load_settings(env)), lambda r: first.append(structured(r)), "being_sent"
        )
    assert first[0]["status"] == "unconfirmed" and "answer never came" in " ".join(first[0]["problems"])
    assert replayed["status"] == "already_sent"
    assert [m["Message-ID"] for m in smtp.messages] == [first[0]["message_id"]]  # delivered once, never again
    assert sent_flags(account) == [{b"\\Seen"}]  # the copy, for the person: the ledger is the record


# --- the census: each change tool under each kind of fault, then replayed until it settles ---

#: (tool, arguments, capabilities hidden, effect, which answers of the server it gets besides the common ones)
CHANGES = [
    ("move_messages", {"destination": "Archive"}, ("MOVE",), "moved", {"copy", "expunge"}, "move-without-MOVE"),
    ("move_messages", {"destination": "Archive"}, (), "moved", {"move"}, "move"),
    ("move_messages", {"destination": "Archive", "mode": "copy"}, (), "copied", {"copy", "search"}, "copy"),
    ("delete_messages", {}, ("MOVE",), "moved", {"copy", "expunge"}, "trash-without-MOVE"),
    ("delete_messages", {"permanent": True}, (), "deleted", {"expunge"}, "delete-permanently"),
]
#: (fault, the answer it needs, or None when every change gets it)
FAULTS = [
    (Fault(b"] Copy completed", "cut"), "copy", "cut-after-copy"),
    (Fault(b"] Moved UIDs", "cut"), "move", "cut-inside-move-answer"),
    (Fault(b"UID MOVE", "cut", direction="to_server"), "move", "cut-inside-move-command"),
    (Fault(b"UID EXPUNGE", "cut", direction="to_server"), "expunge", "cut-inside-expunge-command"),
    (Fault(b"Store completed", "stall"), "expunge", "stall-after-store"),
    (Fault(b"* SEARCH", "trickle", interval=0.1), "search", "trickle-search-answer"),  # a copy's Message-IDs
    (Fault(b" FETCH (UID ", "trickle", interval=0.1), None, "trickle-fetch-answer"),  # which UIDs exist
    (Fault(b"[COPYUID", "reorder"), "copy", "reorder-copyuid"),
    (Fault(b"[COPYUID", "reorder"), "move", "reorder-copyuid"),
]
CASES = [
    pytest.param(tool, arguments, hidden, effect, fault, id=f"{name}-{fault_name}")
    for tool, arguments, hidden, effect, answers, name in CHANGES
    for fault, needs, fault_name in FAULTS
    if needs is None or needs in answers
]
#: what a replay may answer while the change is (or an interrupted attempt seems) still running
SETTLING = ("lost", "IMAP_TIMEOUT")


async def _replayed_until_settled(server: MCPServer, tool: str, arguments: dict[str, Any]) -> None:
    """Ask (again, if a fault broke the asking), answer, and repeat the answer until the change has settled."""
    async with Client(server, mode="2026-07-28", elicitation_callback=Person()) as client:
        with anyio.fail_after(HANG_GUARD):
            while not isinstance(
                asked := await client.session.call_tool(tool, arguments, allow_input_required=True),
                InputRequiredResult,
            ):
                assert any(word in error_text(asked) for word in SETTLING), error_text(asked)
            while True:
                result = await client.session.call_tool(
                    tool, arguments, input_responses=YES, request_state=asked.request_state
                )
                if not result.is_error and result.structured_content["status"] != "in_progress":
                    return
                if result.is_error and "None of these messages exist" in error_text(result):
                    return  # an attempt whose answer was lost did it
                if result.is_error:
                    assert any(word in error_text(result) for word in SETTLING), error_text(result)
                await anyio.sleep(0.3)


@pytest.mark.slow
@pytest.mark.parametrize(("tool", "arguments", "hidden", "effect", "fault"), CASES)
async def test_census_after_a_fault_and_replays(
    account: Account, tool: str, arguments: dict[str, Any], hidden: tuple[str, ...], effect: str, fault: Fault
) -> None:
    ids = message_ids(account, "INBOX")[:3]
    before = census(account)
    changed = Counter(first_message_ids(account, 3))
    with through_proxy(account) as proxy:
        pool = pool_without(account, hidden, settings=proxied(account, proxy))
        armed = proxy.inject(dataclasses.replace(fault))
        server = build_server(Settings(imap=pool.settings), pool=pool)
        await _replayed_until_settled(server, tool, {**arguments, "ids": ids})
        pool.close_all()
    assert armed.fired
    expected = {"moved": before, "copied": before + changed, "deleted": before - changed}[effect]
    assert census(account) == expected
    assert not set(ids) & set(message_ids(account, "INBOX")) or effect == "copied"


# --- issue #38: a change made is reported done, whatever the store does next ---


@pytest.mark.parametrize("kind", KINDS)
async def test_a_store_fault_after_a_move_ran_reports_it_done_and_a_replay_changes_nothing_more(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: Kind
) -> None:
    """The server has moved the messages; its answer is held while the store is locked by another process past
    its timeout (or made immutable), then let through: the move is done, the store cannot record it."""
    monkeypatch.setattr(database, "BUSY_TIMEOUT", 0.5)
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    ids = message_ids(account, "INBOX")[:2]
    before = census(account)
    fault = StoreFault(kind, store_path(url))
    arguments = {"ids": ids, "destination": "Archive"}
    try:
        with through_proxy(account) as proxy:
            moved = Fault(b"] Moved UIDs", "hold")
            proxy.inject(moved)
            settings = load_settings(account.env("none", IMAP_MCP_STORE=url))
            settings = dataclasses.replace(settings, imap=proxied(account, proxy))
            async with Client(build_server(settings), mode="2026-07-28", elicitation_callback=Person()) as client:
                asked = await client.session.call_tool("move_messages", arguments, allow_input_required=True)
                assert isinstance(asked, InputRequiredResult)

                async def answer() -> CallToolResult:
                    return await client.session.call_tool(
                        "move_messages", arguments, input_responses=YES, request_state=asked.request_state
                    )

                done: list[dict[str, Any]] = []

                async def move() -> None:
                    done.append(structured(await answer()))

                with anyio.fail_after(HANG_GUARD):
                    async with anyio.create_task_group() as group:
                        group.start_soon(move)
                        while not moved.fired:  # the server moved them; its answer waits at the proxy
                            await anyio.sleep(0.05)
                        await anyio.to_thread.run_sync(fault.begin)
                        moved.release()
                fault.end()
                again = await answer()
    finally:
        fault.end()
    assert (done[0]["status"], done[0]["count"]) == ("done", 2)
    [problem] = done[0]["problems"]
    assert "the store could not record that it did" in problem and "changes nothing more" in problem
    assert "None of these messages exist in 'INBOX'" in error_text(again)  # planned again: nothing left to move
    assert census(account) == before and not set(ids) & set(message_ids(account, "INBOX"))
