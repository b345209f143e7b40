"""`imap-mcp watch` end to end: real Dovecot, a real receiver on loopback verifying signatures, SQLite.

Waits are generous (a delivery is due within seconds; nothing asserts how fast).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Account, append_message, served, structured
from receiver import Receiver
from watching import Operator, operating, wait_for_status

from imap_mcp.server.config import Settings
from imap_mcp.server.demo.dovecot import free_port
from imap_mcp.server.webhooks.settings import load_webhook_settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

AUTH = "X-Hook-Token: header-value-secret-41c"
SUBJECT = "Quarterly numbers 7f2e"
BODY_TEXT = "body-text-never-in-an-event-91ab"
#: the killed watcher's accounts are taken over once its lease ran out: 4 s instead of the default 15
SHORT_LEASE = ("--lease-seconds", "4")


def mail(number: int = 0) -> bytes:
    return (
        f"From: Bob Sender <bob@example.org>\r\nTo: someone@example.org\r\nSubject: {SUBJECT} #{number}\r\n"
        f"Date: Mon, 30 Nov 2026 10:00:00 +0000\r\nMessage-ID: <n{number}.{time.time_ns()}@example.org>\r\n\r\n"
        f"{BODY_TEXT}\r\n"
    ).encode()


@pytest.fixture
def operator(empty_account: Account, tmp_path: Path, store_url: str) -> Iterator[Operator]:
    """The account's operator with a store of each kind (SQLite, PostgreSQL); retries every second."""
    with operating(empty_account, store_url, tmp_path, IMAP_MCP_WEBHOOK_RETRY_INTERVAL="1") as running:
        yield running


def served_settings(operator: Operator) -> Settings:
    return Settings(imap=operator.account.imap_settings(), webhooks=load_webhook_settings(operator.env()))


def forbidden_values(secret: str, url_path: str) -> list[str]:
    return [secret, secret.removeprefix("whsec_"), url_path, "header-value-secret-41c", BODY_TEXT]


async def test_appended_mail_is_delivered_signed_with_the_auth_header(operator: Operator) -> None:
    with Receiver("") as receiver:
        receiver.secret = operator.set_webhook(receiver.url("/hooks/new-mail-5d3"), AUTH)
        operator.start_watcher()
        operator.wait_until_watching()
        uid = append_message(operator.account, mail(1))
        [delivery] = receiver.wait_for(1)
        assert receiver.refused == 0  # the signature verified
        assert delivery.headers["x-hook-token"] == "header-value-secret-41c"
        assert delivery.event["type"] == "message.received"
        data = delivery.event["data"]
        assert data["account"] == operator.account.imap_settings().account
        assert (data["mailbox"], data["uid"]) == ("INBOX", uid)
        assert data["from"] == "Bob Sender <bob@example.org>" and data["subject"] == f"{SUBJECT} #1"
        assert data["id"].startswith("imap.") and data["date"]
        assert BODY_TEXT not in str(delivery.event)
        status = wait_for_status(operator, "active", drained=True)
        assert status.pending_events == 0 and status.last_success_at is not None
        assert status.url_host == "127.0.0.1"
        async with served(served_settings(operator)) as client:
            shown = structured(await client.call_tool("get_webhook_status", {}))
        shown_by_cli = operator.run("webhook", "show").stdout
    everything = "\n".join([*operator.log_lines(), str(shown), shown_by_cli])
    for value in [*forbidden_values(receiver.secret, "/hooks/new-mail-5d3"), SUBJECT]:
        assert value not in everything, value


async def test_receiver_down_pauses_after_ten_failures_and_enabling_delivers(sqlite_operator: Operator) -> None:
    operator = sqlite_operator
    port = free_port()
    secret = operator.set_webhook(f"http://127.0.0.1:{port}/hooks/down-8e1")
    operator.start_watcher()
    operator.wait_until_watching()
    append_message(operator.account, mail(2))
    paused = wait_for_status(operator, "paused")
    assert paused.paused and paused.enabled and paused.consecutive_failures >= 10
    assert paused.paused_since is not None and paused.next_retry_at is not None
    assert paused.last_error == "could not connect to the receiver" and paused.pending_events == 1
    async with served(served_settings(operator)) as client:  # while the receiver is still down
        enabled = structured(await client.call_tool("set_webhook_enabled", {"enabled": True}))
    assert enabled["paused"] is False and enabled["consecutive_failures"] == 0 and enabled["pending_events"] == 1
    assert enabled["next_retry_at"] is None  # retried promptly
    with Receiver(secret, port=port) as receiver:
        [delivery] = receiver.wait_for(1)
        assert delivery.event["data"]["subject"] == f"{SUBJECT} #2"
    status = wait_for_status(operator, "active", drained=True)
    assert status.pending_events == 0 and status.consecutive_failures == 0
    for value in [*forbidden_values(secret, "/hooks/down-8e1"), SUBJECT]:
        assert value not in "\n".join(operator.log_lines()), value


async def test_a_watcher_killed_mid_delivery_loses_and_duplicates_nothing(operator: Operator) -> None:
    with Receiver("") as receiver:
        receiver.secret = operator.set_webhook(receiver.url())
        receiver.hold()
        first = operator.start_watcher(*SHORT_LEASE)
        operator.wait_until_watching()
        uids = [append_message(operator.account, mail(n)) for n in range(3)]
        assert receiver.held.wait(60), "the first delivery never arrived"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        receiver.release.set()
        uids += [append_message(operator.account, mail(n)) for n in range(3, 5)]  # while no watcher runs
        operator.start_watcher(*SHORT_LEASE)  # takes over once the killed one's lease ran out
        deliveries = receiver.wait_for(5, timeout=120)
        time.sleep(2)  # anything extra would arrive now
        deliveries = receiver.wait_for(5)
    by_uid: dict[int, set[str]] = {}
    for delivery in deliveries:
        by_uid.setdefault(delivery.event["data"]["uid"], set()).add(delivery.webhook_id)
    assert sorted(by_uid) == sorted(uids)
    assert all(len(ids) == 1 for ids in by_uid.values())  # a resend carries the same webhook-id
    assert len(deliveries) == 5
    assert [d.event["sequence"] for d in deliveries] == [1, 2, 3, 4, 5]  # in order


async def test_two_watchers_deliver_each_event_once(operator: Operator) -> None:
    with Receiver("") as receiver:
        receiver.secret = operator.set_webhook(receiver.url())
        operator.start_watcher()
        operator.start_watcher()
        operator.wait_until_watching()
        uids = [append_message(operator.account, mail(n)) for n in range(4)]
        receiver.wait_for(4)
        time.sleep(3)  # a second delivery of any of them would arrive now
        deliveries = receiver.wait_for(4)
    assert sorted(d.event["data"]["uid"] for d in deliveries) == uids
    assert len({d.webhook_id for d in deliveries}) == len(deliveries) == 4
    assert any("standing by" in line for line in operator.log_lines())


def test_watch_refuses_to_start_when_webhooks_are_off(sqlite_operator: Operator) -> None:
    done = sqlite_operator.run("watch", IMAP_MCP_WEBHOOKS="false")
    assert done.returncode == 2 and "IMAP_MCP_WEBHOOKS=false" in done.stderr
