"""Changes by query (delete_messages, move_messages, set_message_flags) against Dovecot: the query is resolved
to a UID set before anyone is asked, the approval is bound to that set, and what matches only later is never
touched; nothing matched, nothing asked; large results are bounded."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import anyio
import httpx
import pytest
from fault_proxy import Fault, FaultProxy
from harness import (
    MODES,
    Account,
    Person,
    ProgressNotifications,
    ServerLog,
    answer,
    append_message,
    ask,
    dialog_text,
    error_text,
    http_server,
    inbox_uids,
    message_id_counts,
    message_ids,
    served,
    stdio_params,
    structured,
)
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from imap_mcp.server.changes import by_query
from imap_mcp.server.changes.messages import BATCH
from imap_mcp.server.tools.results import LISTED_IDS_MAX

pytestmark = pytest.mark.anyio

SENDER = "Query Sender <query.sender@example.org>"


def mail(subject: str, sender: str = SENDER, message_id: str | None = None) -> bytes:
    header = f"Message-ID: {message_id}\r\n" if message_id else ""
    return (
        f"From: {sender}\r\nTo: owner@example.com\r\nSubject: {subject}\r\n{header}"
        "Date: Tue, 1 Dec 2026 09:00:00 +0000\r\nMIME-Version: 1.0\r\n\r\nbody\r\n"
    ).encode()


def from_sender(account: Account, count: int) -> list[int]:
    """Append `count` messages from SENDER to INBOX; their UIDs."""
    return [append_message(account, mail(f"query test {n}")) for n in range(count)]


QUERY = {"mailbox": "INBOX", "from": "query.sender@example.org"}


async def test_a_dialog_answer_acts_on_the_set_asked_about_not_on_mail_that_matches_later(account: Account) -> None:
    asked = from_sender(account, 3)
    args = {"query": QUERY, "permanent": True}
    async with served(account, mode="2026-07-28", elicitation_callback=Person()) as client:
        question = await ask(client, "delete_messages", args)
        shown = dialog_text(question)
        assert 'Permanently delete 3 messages from "INBOX"?' in shown
        assert f"{asked[0]}:{asked[-1]}" in shown and 'from "query.sender@example.org"' in shown
        assert "only the messages that matched when asked" in shown and "the search criteria" in shown
        arrived = append_message(account, mail("arrived between question and answer"))
        done = structured(await answer(client, "delete_messages", args, question.request_state))
    assert done["status"] == "done" and done["count"] == 3 and done["approved_by"] == "dialog"
    left = inbox_uids(account)
    assert arrived in left and not set(asked) & left


async def test_a_message_that_starts_matching_after_the_question_is_left_alone(account: Account) -> None:
    unread = sorted(inbox_uids(account))
    client = account.imap()
    client.select_folder("INBOX")
    seen_before = set(client.search(["SEEN"]))
    args = {"query": {"unread_only": True}, "destination": "Archive", "mode": "copy"}
    async with served(account, mode="2026-07-28", elicitation_callback=Person()) as mcp:
        question = await ask(mcp, "move_messages", args)
        made_unread = sorted(seen_before)[0]
        client.remove_flags([made_unread], [b"\\Seen"])  # another client: it matches the query from now on
        done = structured(await answer(mcp, "move_messages", args, question.request_state))
    client.logout()
    expected = len([uid for uid in unread if uid not in seen_before])
    assert done["status"] == "done" and done["count"] == expected and done["new_count"] == expected
    assert made_unread not in {int(i.rsplit(".", 1)[-1]) for i in done["ids"]}


async def test_the_token_path_binds_the_resolved_set_and_a_replay_acts_only_on_what_is_left(account: Account) -> None:
    asked = from_sender(account, 2)
    args = {"query": QUERY, "destination": "Archive"}
    async with served(account, mode="legacy") as client:  # no dialog: the two-call token
        first = structured(await client.call_tool("move_messages", args))
        assert first["status"] == "confirmation_required" and len(first["ids"]) == 2
        arrived = append_message(account, mail("arrived between the two calls"))
        with_token = {**args, "confirm_token": first["confirm_token"]}
        done = structured(await client.call_tool("move_messages", with_token))
        replay = structured(await client.call_tool("move_messages", with_token))
    assert done["status"] == "done" and done["count"] == 2 and done["approved_by"] == "token"
    assert replay["status"] == "nothing_to_do" and replay["count"] == 0
    left = inbox_uids(account)
    assert arrived in left and not set(asked) & left
    assert len(message_ids(account, "Archive")) == 3  # the sample's one, and the two moved


async def test_a_pushed_dialog_shows_the_criteria_and_runs_once(account: Account) -> None:
    asked = from_sender(account, 2)
    person = Person()
    async with served(account, mode="legacy", elicitation_callback=person) as client:
        done = structured(await client.call_tool("delete_messages", {"query": QUERY}))
    assert done["status"] == "done" and done["approved_by"] == "push" and done["destination"] == "Trash"
    (shown,) = person.shown
    assert 'Move 2 messages from "INBOX" to the Trash mailbox' in shown and "query.sender@example.org" in shown
    assert not set(asked) & inbox_uids(account)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_query_that_matches_nothing_asks_nobody(account: Account, mode: str) -> None:
    person = Person()
    before = message_ids(account, "INBOX")
    async with served(account, mode=mode, elicitation_callback=person) as client:
        deleted = await client.call_tool("delete_messages", {"query": {"subject": "no such subject anywhere"}})
        moved = await client.call_tool("move_messages", {"query": QUERY, "destination": "Archive"})
        flagged = await client.call_tool("set_message_flags", {"query": QUERY, "add": ["\\Flagged"]})
    for result in (deleted, moved):
        assert result.structured_content["status"] == "nothing_to_do"
        assert "Nobody was asked" in result.content[0].text  # type: ignore[union-attr]
    assert structured(flagged)["count"] == 0 and person.shown == []
    assert message_ids(account, "INBOX") == before


async def test_flags_by_query_change_exactly_the_matching_messages(account: Account) -> None:
    asked = from_sender(account, 3)
    async with served(account) as client:
        result = structured(await client.call_tool("set_message_flags", {"query": QUERY, "add": ["$Query"]}))
    assert result["count"] == 3 and len(result["ids"]) == 3 and result["rest"] is None
    client_ = account.imap()
    client_.select_folder("INBOX", readonly=True)
    assert set(client_.search(["KEYWORD", "$Query"])) == set(asked)
    client_.logout()


def bulk(account: Account, count: int) -> set[str]:
    """Append `count` messages from SENDER to INBOX on one connection; their Message-IDs (each its own)."""
    client = account.imap()
    message_ids = {f"<bulk-{n}-{uuid.uuid4().hex}@example.org>" for n in range(count)}
    for n, message_id in enumerate(sorted(message_ids)):
        client.append("INBOX", mail(f"bulk {n}", message_id=message_id))
    client.logout()
    return message_ids


async def test_a_large_change_answers_in_counts_and_ranges(account: Account) -> None:
    count = LISTED_IDS_MAX + 20
    bulk(account, count)
    args = {"query": QUERY, "destination": "Archive"}
    async with served(account, mode="legacy", elicitation_callback=Person()) as mcp:
        done = structured(await mcp.call_tool("move_messages", args))
        flags = structured(await mcp.call_tool("set_message_flags", {"query": {"mailbox": "Archive"}, "add": ["$B"]}))
    assert done["count"] == count and done["new_count"] == count
    assert len(done["ids"]) == LISTED_IDS_MAX and len(done["new_ids"]) == LISTED_IDS_MAX
    assert "search_messages in 'Archive' lists the new ids" in done["rest"]
    assert flags["count"] == count + 1 and len(flags["ids"]) == LISTED_IDS_MAX and flags["rest"]


async def test_a_query_over_the_cap_is_refused_before_anyone_is_asked(
    account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(by_query, "MAX_QUERY_MATCHES", 2)
    person = Person()
    before = message_ids(account, "INBOX")
    async with served(account, mode="legacy", elicitation_callback=person) as client:
        refused = error_text(await client.call_tool("delete_messages", {"query": {"mailbox": "INBOX"}}))
    assert "matches" in refused and "at most 2" in refused and "narrow it" in refused and person.shown == []
    assert message_ids(account, "INBOX") == before


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"query": {"form": "typo"}}, "form"),
        ({"query": QUERY, "ids": ["imap.x"]}, "not both"),
        ({"query": {"since": "2026-02-01", "before": "2026-01-01"}}, "must be earlier"),
    ],
)
async def test_bad_queries_are_refused_and_change_nothing(account: Account, args: dict[str, Any], said: str) -> None:
    person = Person()
    before = message_ids(account, "INBOX")
    async with served(account, mode="legacy", elicitation_callback=person) as client:
        refused = error_text(await client.call_tool("delete_messages", args))
    assert said in refused and person.shown == []
    assert message_ids(account, "INBOX") == before


async def progress_of_a_long_change(account: Account, server: Any, mode: str) -> None:
    """A copy then a move of 2 batches and a bit, by query: progress after each batch to the call that passed a
    progress token, none to the one that did not."""
    count = 2 * BATCH + 10
    bulk(account, count)
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    args = {"query": QUERY, "destination": "Archive", "mode": "copy"}
    notified = ProgressNotifications()
    async with Client(server, mode=mode, elicitation_callback=Person(), message_handler=notified) as client:
        result = await client.call_tool("move_messages", args, progress_callback=progress)
        # no progress token: none sent; into Junk, as Archive holds them now (a move never duplicates)
        quiet = await client.call_tool("move_messages", {**args, "destination": "Junk", "mode": "move"})
    assert structured(result)["count"] == count and structured(quiet)["count"] == count
    assert len(notified.progress) == len(seen)
    assert [(done, total) for done, total, _ in seen] == [(BATCH, count), (2 * BATCH, count), (count, count)]
    assert all(message and message.startswith("copy ") for _, _, message in seen)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_long_change_reports_progress_over_stdio_to_a_client_that_asked(account: Account, mode: str) -> None:
    await progress_of_a_long_change(account, stdio_params(account.env()), mode)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_long_change_reports_progress_over_http_to_a_client_that_asked(account: Account, mode: str) -> None:
    """2026-07-28: the POST's response turns into an SSE stream; 2025-11-25: in the session's SSE response."""
    with http_server(account.env()) as url:
        await progress_of_a_long_change(account, url, mode)


def test_a_change_stopped_between_batches_reports_exactly_the_batches_that_ran(account: Account) -> None:
    """What cancellation does (`after_batch` answers False once the call is cancelled): whole batches only."""
    from imap_mcp.server.changes.messages import Execution, execute_message_change, plan_message_change
    from imap_mcp.server.imap.lookup import MessageSelection
    from imap_mcp.server.imap.pool import ImapPool
    from imap_mcp.server.reading.search import SearchQuery

    bulk(account, BATCH + 10)
    pool = ImapPool(account.imap_settings())
    asked = set(pool.run_sync(lambda c: by_query.resolve_query(c, "INBOX", SearchQuery(QUERY["from"])).uids))
    selection = MessageSelection("INBOX", None, tuple(sorted(asked)))
    target = pool.run_sync(lambda c: plan_message_change(c, account.username, selection, "move", "Archive"))
    told: list[tuple[int, int]] = []

    def after_batch(done: int, total: int) -> bool:
        told.append((done, total))
        return False  # as if the call was cancelled during the first batch

    report = pool.run_sync(lambda c: execute_message_change(c, target, Execution(after_batch=after_batch)), retry=False)
    pool.close_all()
    assert told == [(BATCH, BATCH + 10)] and len(report.done) == BATCH and len(report.not_run) == 10
    assert set(report.done) | set(report.not_run) == asked and len(report.new_uids) == BATCH
    assert asked & inbox_uids(account) == set(report.not_run)


# --- cancellation through the real transports: whole batches only, nothing lost or twice ---

MOVE_ALL = {"query": QUERY, "destination": "Archive"}
#: how many messages a move cancelled as below has moved: the batch before the cancellation, and the one it held
MOVED_WHEN_CANCELLED = 2 * BATCH


def proxied_env(account: Account, proxy: FaultProxy) -> dict[str, str]:
    """imap-mcp talking plain IMAP through `proxy`; IMAP_TIMEOUT only a hang guard while a batch is held."""
    return account.env("none", IMAP_PORT=str(proxy.port), IMAP_TIMEOUT="120")


def hold_the_second_batch(proxy: FaultProxy) -> Fault:
    """The second batch's MOVE waits half-sent at the proxy until released."""
    return proxy.inject(Fault(b" UID MOVE ", "hold", direction="to_server", skip=1))


async def cancel_during_the_second_batch(client: Client, held: Fault, log: ServerLog) -> str:
    """Move every bulk message by query; once the first batch's progress arrives, cancel the call while the second
    batch is held; once the server has logged the cancellation, let that batch go on. The server's line saying
    where the change stopped."""
    first_batch_done = anyio.Event()

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        first_batch_done.set()

    async with anyio.create_task_group() as calling:
        calling.start_soon(partial(client.call_tool, "move_messages", MOVE_ALL, progress_callback=progress))
        await first_batch_done.wait()
        calling.cancel_scope.cancel()  # stdio: notifications/cancelled; Streamable HTTP: the stream is closed
    await log.line("cancelled by the client; stopping after the running batch")
    held.release()
    return await log.line("stopped by cancellation")


def assert_whole_batches_moved(account: Account, sent: set[str], stopped: str) -> None:
    """The server said it stopped after two batches; the mailboxes agree, message by message."""
    rest = len(sent) - MOVED_WHEN_CANCELLED
    assert stopped.endswith(
        f"move mailbox='INBOX' stopped by cancellation after {MOVED_WHEN_CANCELLED} message(s); {rest} not changed"
    )
    client = account.imap()
    try:
        inbox, archive = message_id_counts(client, "INBOX"), message_id_counts(client, "Archive")
    finally:
        client.logout()
    moved = Counter({m: n for m, n in archive.items() if m in sent})
    left = Counter({m: n for m, n in inbox.items() if m in sent})
    assert len(moved) == MOVED_WHEN_CANCELLED and len(left) == rest and set(moved) | set(left) == sent
    assert set(moved.values()) == set(left.values()) == {1}  # nothing twice
    assert not [m for m in archive if m.endswith("@imap-mcp.invalid>")]  # the change's claim is gone


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_move_cancelled_over_stdio_stops_between_batches(account: Account, mode: str) -> None:
    sent = bulk(account, 3 * BATCH + 10)
    with FaultProxy(account.server.port) as proxy, ServerLog() as log:
        held = hold_the_second_batch(proxy)
        transport = stdio_client(stdio_params(proxied_env(account, proxy)), errlog=log.writer)
        async with Client(transport, mode=mode, elicitation_callback=Person()) as client:
            stopped = await cancel_during_the_second_batch(client, held, log)
    assert_whole_batches_moved(account, sent, stopped)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_move_cancelled_over_http_stops_between_batches(account: Account, mode: str) -> None:
    """2026-07-28: the client closes the response stream; 2025-11-25: it posts notifications/cancelled."""
    sent = bulk(account, 3 * BATCH + 10)
    with FaultProxy(account.server.port) as proxy, ServerLog() as log:
        held = hold_the_second_batch(proxy)
        with http_server(proxied_env(account, proxy), stderr=log) as url:
            async with Client(url, mode=mode, elicitation_callback=Person()) as client:
                stopped = await cancel_during_the_second_batch(client, held, log)
    assert_whole_batches_moved(account, sent, stopped)


LEGACY_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


INITIALIZE_2025 = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


def move_call(request_id: int, arguments: dict[str, Any], progress_token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "move_messages", "arguments": arguments}
    if progress_token is not None:
        params["_meta"] = {"progressToken": progress_token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def sse_messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of an SSE response, as they arrive."""
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            yield json.loads(line[5:])


async def legacy_post(http: httpx.AsyncClient, url: str, message: dict[str, Any]) -> dict[str, Any]:
    """POST one request of a 2025-11-25 session; its answer (the response of its SSE stream)."""
    async with http.stream("POST", url, json=message) as response:
        async for answer in sse_messages(response):
            if answer.get("id") == message["id"]:
                return answer
    raise AssertionError(f"no answer to {message['method']}")


@pytest.mark.slow
async def test_a_2025_session_over_http_answers_a_cancelled_move_request_cancelled(account: Account) -> None:
    """The one transport that still answers a cancelled call: the SDK ends the 2025-11-25 request's SSE stream
    with -32800 (its stream ends only with a response); the move stopped after the running batch all the same."""
    sent = bulk(account, 3 * BATCH + 10)
    with FaultProxy(account.server.port) as proxy, ServerLog() as log:
        held = hold_the_second_batch(proxy)
        with http_server(proxied_env(account, proxy), stderr=log) as url:
            async with httpx.AsyncClient(headers=LEGACY_HEADERS, timeout=120) as http:
                opened = await http.post(url, json=INITIALIZE_2025)
                http.headers.update(
                    {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
                )
                await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
                first = await legacy_post(http, url, move_call(2, MOVE_ALL))  # no dialog declared: the two-call token
                token = first["result"]["structuredContent"]["confirm_token"]
                with_token = move_call(3, {**MOVE_ALL, "confirm_token": token}, progress_token="move")
                async with http.stream("POST", url, json=with_token) as response:
                    messages = sse_messages(response)
                    progress = await anext(messages)
                    cancel = {"requestId": 3, "reason": "the user stopped it"}
                    acknowledged = await http.post(
                        url, json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
                    )
                    await log.line("cancelled by the client; stopping after the running batch")
                    held.release()
                    rest = [message async for message in messages]
                stopped = await log.line("stopped by cancellation")
    assert progress["method"] == "notifications/progress" and progress["params"]["progress"] == BATCH
    assert acknowledged.status_code == 202
    assert rest == [{"jsonrpc": "2.0", "id": 3, "error": {"code": -32800, "message": "Request cancelled"}}]
    assert_whole_batches_moved(account, sent, stopped)


@pytest.mark.parametrize("gone", ["recreated", "emptied"])
async def test_an_answer_that_finds_nothing_left_never_says_nobody_was_asked(account: Account, gone: str) -> None:
    """A delete by query, asked about in a dialog; before the answer comes, the mailbox is re-created (a new
    UIDVALIDITY, nothing in it matching) or its messages are moved away: nothing is changed, and the answer says
    the person's answer was not used, never that nobody was asked (issue 39 item 8)."""
    folder = f"Q{uuid.uuid4().hex[:8]}"
    direct = account.imap()
    direct.create_folder(folder)
    direct.logout()
    append_message(account, mail("asked about"), folder)
    args = {"query": {"mailbox": folder}}
    async with served(account, mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "delete_messages", args)
        direct = account.imap()
        if gone == "recreated":
            direct.delete_folder(folder)
            direct.create_folder(folder)
        else:
            direct.select_folder(folder)
            direct.move(direct.search("ALL"), "Archive")
        direct.logout()
        result = await answer(client, "delete_messages", args, asked.request_state)
    assert isinstance(result, CallToolResult) and isinstance(result.content[0], TextContent)
    text = result.content[0].text
    assert structured(result)["status"] == "nothing_to_do" and "Nobody was asked" not in text
    assert "none of the messages the person was asked about" in text and "answer was not used" in text
