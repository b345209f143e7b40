"""One approval, one delivery, whoever writes the keywords: the approval ledger decides, not the mailbox.

Each test counts deliveries at the SMTP listener. The attacks are those of issue #25: a caller
forging the keyword of the old Sent-copy record with tools that ask no one, a server that takes
keywords and keeps none, replays at once, after the claim's lifetime and after a cut, and two
replicas answering the same approval at the same moment (sharing a SQLite store, or PostgreSQL).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fault_proxy import Fault, FaultProxy
from harness import Account, Person, error_text, http_server, served, structured
from keyword_dropping import KeywordDroppingServer
from mcp import Client
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult, InputResponses
from postgres import PrivatePostgres
from smtp_capture import SENDER, CaptureSMTP, Gate
from store_faults import KINDS, FaultAtData, Kind, StoreFault, store_path

from imap_mcp.server.config import Settings, load_settings
from imap_mcp.server.outgoing import send_once
from imap_mcp.server.outgoing.smtp import send
from imap_mcp.server.store import database
from imap_mcp.server.store.database import Store
from imap_mcp.server.store.ledger import ledger_at

pytestmark = pytest.mark.anyio

MESSAGE: dict[str, Any] = {"to": ["alice@example.com"], "subject": "Lunch on Friday", "body": "Friday at noon?\n"}
YES: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}
#: IMAP_TIMEOUT in these tests: an attempt `running` for twice this long is taken for dead
TIMEOUT = 1.0
#: what the old record relied on: a Sent copy marked with these keywords was an attempt in flight
FORGED = [b"$ImapMcpSending", b"$ImapMcpHandedOver"]


def sent_message_uids(account: Account, message_id: str) -> list[int]:
    client = account.imap()
    try:
        client.select_folder("Sent", readonly=True)
        return list(client.search(["HEADER", "Message-ID", message_id]))
    finally:
        client.logout()


def forge_keywords_on(account: Account, message_id: str) -> None:
    """What another mail client of the same person (or any tool that sets keywords) could do to the Sent copy."""
    client = account.imap()
    try:
        client.select_folder("Sent")
        uids = client.search(["HEADER", "Message-ID", message_id])
        client.add_flags(uids, FORGED)
        assert all(set(FORGED) <= set(flags) for flags in client.get_flags(uids).values())
    finally:
        client.logout()


def past_the_claims_lifetime() -> None:
    """Let every claim the old record would have honoured expire (twice IMAP_TIMEOUT, and a margin)."""
    time.sleep(2 * TIMEOUT + 0.5)


@contextlib.asynccontextmanager
async def approved(settings: Settings, message: dict[str, Any] = MESSAGE) -> AsyncIterator[Any]:
    """A 2026-07-28 client whose person approved `message` once; yields `answer()`, the approved retry, to replay."""
    async with served(settings, mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await client.session.call_tool("send_message", message, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)

        async def answer() -> CallToolResult:
            return await client.session.call_tool(
                "send_message", message, input_responses=YES, request_state=asked.request_state
            )

        yield answer


async def test_a_forged_sending_keyword_and_a_replay_after_the_claims_lifetime_deliver_nothing_more(
    account: Account,
) -> None:
    """Issue #25's attack: find the Sent copy, mark it as an attempt in flight, wait, replay the approval."""
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        settings = load_settings(account.env(**smtp.env(), SMTP_FROM=SENDER, IMAP_TIMEOUT=str(TIMEOUT)))
        async with approved(settings) as answer:
            sent = structured(await answer())
            async with served(settings, mode="2026-07-28") as caller:
                found = structured(await caller.call_tool("search_messages", {"mailbox": "Sent"}))
                [copy] = [m["id"] for m in found["messages"] if m["subject"] == MESSAGE["subject"]]
                tried = await caller.call_tool("set_message_flags", {"ids": [copy], "add": ["$ImapMcpSending"]})
                assert "imap-mcp's own keywords" in error_text(tried)
            forge_keywords_on(account, sent["message_id"])
            past_the_claims_lifetime()
            replayed = structured(await answer())
    assert (sent["status"], replayed["status"]) == ("sent", "already_sent")
    assert [m["Message-ID"] for m in smtp.messages] == [sent["message_id"]]
    assert len(sent_message_uids(account, sent["message_id"])) == 1


@contextlib.contextmanager
def keyword_dropping(account: Account, smtp: CaptureSMTP, **env: str) -> Iterator[Settings]:
    """Settings that reach the account through a server that takes keywords and keeps none."""
    with KeywordDroppingServer(account.dovecot.port) as server:
        reach = {**smtp.env(), "SMTP_FROM": SENDER, "IMAP_TIMEOUT": str(TIMEOUT), **env}
        settings = load_settings(account.env(**reach))
        yield dataclasses.replace(settings, imap=dataclasses.replace(account.imap_settings("none"), port=server.port))


@pytest.mark.parametrize("replayed", ["at-once", "after-the-claims-lifetime"])
async def test_on_a_server_that_keeps_no_keyword_a_replay_delivers_nothing_more(
    account: Account, replayed: str
) -> None:
    with CaptureSMTP(auth=(account.username, account.password)) as smtp, keyword_dropping(account, smtp) as settings:
        async with approved(settings) as answer:
            sent = structured(await answer())
            if replayed == "after-the-claims-lifetime":
                past_the_claims_lifetime()
            again = structured(await answer())
    assert (sent["status"], again["status"]) == ("sent", "already_sent")
    assert [m["Message-ID"] for m in smtp.messages] == [sent["message_id"]]
    assert sent["saved_to_sent"] and len(sent_message_uids(account, sent["message_id"])) == 1


async def test_on_a_server_that_keeps_no_keyword_a_lost_smtp_answer_is_not_sent_again(account: Account) -> None:
    """The proxy holds everything the SMTP server says after its go-ahead for the data: its 250 never arrives."""
    with CaptureSMTP(auth=(account.username, account.password)) as smtp, FaultProxy(smtp.port) as proxy:
        proxy.inject(Fault(b"354 End data with <CR><LF>.<CR><LF>\r\n", "stall"))
        with keyword_dropping(account, smtp, SMTP_PORT=str(proxy.port), SMTP_TIMEOUT="2") as settings:
            async with approved(settings) as answer:
                first = structured(await answer())
                past_the_claims_lifetime()
                again = structured(await answer())
    assert first["status"] == "unconfirmed"
    assert again["status"] == "already_sent" and "probably sent" in " ".join(again["problems"])
    assert [m["Message-ID"] for m in smtp.messages] == [first["message_id"]]


async def test_a_cut_while_filing_the_sent_copy_reports_the_send_and_a_replay_delivers_nothing_more(
    account: Account,
) -> None:
    """The message went out; the connection drops on the way to Sent: the send is still reported, once."""
    with (
        CaptureSMTP(auth=(account.username, account.password)) as smtp,
        keyword_dropping(account, smtp) as dropping,
        FaultProxy(dropping.imap.port) as proxy,
    ):
        proxy.inject(Fault(b"APPEND", "cut", direction="to_server"))
        settings = dataclasses.replace(dropping, imap=dataclasses.replace(dropping.imap, port=proxy.port))
        async with approved(settings) as answer:
            first = structured(await answer())
            again = structured(await answer())
    assert first["status"] == "sent" and not first["saved_to_sent"]
    assert "filing its copy" in " ".join(first["problems"])
    assert again["status"] == "already_sent"
    assert [m["Message-ID"] for m in smtp.messages] == [first["message_id"]]


async def test_a_failed_send_is_released_so_a_replay_after_the_claims_lifetime_sends_it_once(
    account: Account,
) -> None:
    with CaptureSMTP(fail_data_code=451) as flaky, keyword_dropping(account, flaky) as settings:
        async with approved(settings) as answer:
            assert "did not take the message (451" in error_text(await answer())
            flaky.fail_data_code = None
            past_the_claims_lifetime()
            sent = structured(await answer())
            again = structured(await answer())
    assert (sent["status"], again["status"]) == ("sent", "already_sent")
    assert [m["Message-ID"] for m in flaky.messages] == [sent["message_id"]]


# --- two replicas, one approval, answered on both at the same moment ------------------------------------------

SHARED_SEAL_KEYS = "replica-key-" + "r" * 40


@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
async def test_two_replicas_answering_one_approval_at_once_deliver_it_once(
    account: Account, store: str, request: pytest.FixtureRequest
) -> None:
    """Both replicas get the approved retry while the first is still at SMTP's DATA (the gate holds it)."""
    shared = {"IMAP_MCP_SEAL_KEYS": SHARED_SEAL_KEYS}
    if store == "postgresql":
        cluster: PrivatePostgres = request.getfixturevalue("postgres")
        shared["IMAP_MCP_STORE"] = cluster.new_database()
    gate = Gate(2)
    with CaptureSMTP(auth=(account.username, account.password), gate=gate) as smtp:
        env = account.env(**smtp.env(), SMTP_FROM=SENDER, **shared)
        with http_server(env) as first_url, http_server(env) as second_url:
            async with (
                Client(first_url, mode="2026-07-28", elicitation_callback=Person()) as first,
                Client(second_url, mode="2026-07-28", elicitation_callback=Person()) as second,
            ):
                asked = await first.session.call_tool("send_message", MESSAGE, allow_input_required=True)
                assert isinstance(asked, InputRequiredResult)
                results: list[dict[str, Any]] = []

                async def answer_on(replica: Client) -> None:
                    try:
                        result = await replica.session.call_tool(
                            "send_message", MESSAGE, input_responses=YES, request_state=asked.request_state
                        )
                        results.append(structured(result))
                    finally:
                        gate.returned()

                with anyio.fail_after(60):
                    async with anyio.create_task_group() as group:
                        group.start_soon(answer_on, first)
                        group.start_soon(answer_on, second)
    assert sorted(r["status"] for r in results) == ["being_sent", "sent"]
    [message] = smtp.messages
    assert {r["message_id"] for r in results} == {message["Message-ID"]}


# --- issue #38: never "failed" after it happened; a replay while SMTP stalls; a store made again -------------


def store_settings(account: Account, smtp: CaptureSMTP, url: str, **env: str) -> Settings:
    return load_settings(account.env(**smtp.env(), SMTP_FROM=SENDER, IMAP_MCP_STORE=url, **env))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_store_fault_after_smtp_took_the_message_reports_it_sent_and_a_replay_sends_nothing_more(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: Kind
) -> None:
    """Break 3: the store locked by another process past its timeout (or made immutable) while SMTP answers."""
    monkeypatch.setattr(database, "BUSY_TIMEOUT", 0.5)
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    fault = StoreFault(kind, store_path(url))
    try:
        with CaptureSMTP(auth=(account.username, account.password), gate=FaultAtData(fault)) as smtp:
            async with approved(store_settings(account, smtp, url)) as answer:
                sent = structured(await answer())
                fault.end()
                again = structured(await answer())
    finally:
        fault.end()
    assert (sent["status"], sent["saved_to_sent"]) == ("sent", True)
    [problem] = sent["problems"]
    assert "The store could not record the outcome" in problem and "sends nothing more" in problem
    assert again["status"] in ("being_sent", "already_sent")
    assert [m["Message-ID"] for m in smtp.messages] == [sent["message_id"]]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_store_that_cannot_record_refuses_a_send_and_a_move_before_anyone_is_asked(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: Kind
) -> None:
    monkeypatch.setattr(database, "BUSY_TIMEOUT", 0.5)
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    Store(url)
    person = Person()
    fault = StoreFault(kind, store_path(url))
    try:
        with CaptureSMTP(auth=(account.username, account.password)) as smtp:
            fault.begin()
            async with served(store_settings(account, smtp, url), mode="2026-07-28", elicitation_callback=person) as c:
                send = error_text(await c.call_tool("send_message", MESSAGE))
                [first, *_] = structured(await c.call_tool("search_messages", {}))["messages"]
                move = error_text(await c.call_tool("move_messages", {"ids": [first["id"]], "destination": "Archive"}))
    finally:
        fault.end()
    assert "send_message: Nothing was sent: The SQLite store at " in send
    assert "move_messages: The SQLite store at " in move
    assert person.shown == [] and smtp.messages == []


async def test_a_replay_while_smtp_holds_its_answer_past_the_claims_lifetime_sends_nothing_more(
    account: Account,
) -> None:
    """The message is handed over; the SMTP server holds its answer past twice IMAP_TIMEOUT; the approval is
    replayed meanwhile. Only `handing_over`, written before SMTP, keeps the replay from taking the row over as
    dead and sending again (the gate would then let both through)."""
    gate = Gate(2)
    with CaptureSMTP(auth=(account.username, account.password), gate=gate) as smtp:
        env = {**smtp.env(), "SMTP_FROM": SENDER, "IMAP_TIMEOUT": str(TIMEOUT), "SMTP_TIMEOUT": "60"}
        async with approved(load_settings(account.env(**env))) as answer:
            first: list[dict[str, Any]] = []

            async def send_first() -> None:
                first.append(structured(await answer()))

            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    group.start_soon(send_first)
                    await anyio.sleep(2 * TIMEOUT + 0.5)  # the first attempt waits at DATA all this time
                    replayed = structured(await answer())
                    gate.returned()
    assert (first[0]["status"], replayed["status"]) == ("sent", "being_sent")
    assert [m["Message-ID"] for m in smtp.messages] == [first[0]["message_id"]]


async def test_a_confirm_token_approved_before_the_store_was_made_again_sends_nothing_more(
    account: Account, tmp_path: Path
) -> None:
    """Break 5: the store deleted under a running server; that server, and a restarted one that makes a fresh
    store, are each given the approved confirm_token again."""
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        settings = store_settings(account, smtp, url, ELICITATION="false", IMAP_MCP_SEAL_KEYS=SHARED_SEAL_KEYS)
        async with served(settings) as client:
            token = structured(await client.call_tool("send_message", MESSAGE))["confirm_token"]
            sent = structured(await client.call_tool("send_message", {**MESSAGE, "confirm_token": token}))
            store_path(url).unlink()
            running = error_text(await client.call_tool("send_message", {**MESSAGE, "confirm_token": token}))
        ledger_at.cache_clear()  # a restart: the process forgets the store it opened
        async with served(settings) as client:
            restarted = error_text(await client.call_tool("send_message", {**MESSAGE, "confirm_token": token}))
    assert sent["status"] == "sent"
    assert "is not the one imap-mcp opened when it started" in running
    assert "The confirm_token does not fit this call" in restarted
    assert [m["Message-ID"] for m in smtp.messages] == [sent["message_id"]]


async def test_an_error_no_layer_expected_after_the_message_left_is_a_problem_beside_the_send(
    account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What no real part raises (a bug) is stood in for here: in filing the Sent copy, then (another approval) in
    the hand-over after SMTP took the message. Neither may turn a delivered message into an internal error."""

    def broken_filing(*args: Any) -> None:
        raise RuntimeError("a bug while filing")

    def sent_then_broken(*args: Any) -> dict[str, str]:
        send(*args)
        raise RuntimeError("a bug after the hand-over")

    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        settings = load_settings(account.env(**smtp.env(), SMTP_FROM=SENDER))
        monkeypatch.setattr(send_once, "file_sent_copy", broken_filing)
        async with approved(settings) as answer:
            filed = structured(await answer())
        monkeypatch.setattr(send_once, "send", sent_then_broken)
        async with approved(settings, {**MESSAGE, "subject": "Lunch on Saturday"}) as answer:
            handed = structured(await answer())
            again = structured(await answer())
    assert (filed["status"], filed["saved_to_sent"]) == ("sent", False)
    assert "filing the Sent copy failed inside imap-mcp (RuntimeError" in " ".join(filed["problems"])
    assert handed["status"] == "unconfirmed" and "may have been sent" in " ".join(handed["problems"])
    assert again["status"] == "already_sent"
    assert [m["Message-ID"] for m in smtp.messages] == [filed["message_id"], handed["message_id"]]
