"""The outbox keeps no stranger's sender or subject in clear text: event bodies are encrypted with the store keys.

Issue #28: only the webhook's URL, header and secret were encrypted; every event's sender and
subject sat in the store in clear text. Events an earlier version stored in clear text are still
delivered as they are, and are encrypted the next time the watcher adds events or the operator
runs `webhook set`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness import Account, append_message
from receiver import Receiver
from watching import Operator, operating
from webhook_helpers import ACCOUNT, add_events, new_key

from imap_mcp.server.setting_values import Secret
from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.cipher import PREFIX, StoreCipher, Unreadable
from imap_mcp.server.webhooks.delivery import deliver_one
from imap_mcp.server.webhooks.outbox import rfc3339
from imap_mcp.server.webhooks.rows import load_row
from imap_mcp.server.webhooks.settings import WebhookSettings

SENDER = "Mallory Stranger <mallory-4c1e@example.org>"
SUBJECT = "Private matter 93d0"


def mail(subject: str) -> bytes:
    return (
        f"From: {SENDER}\r\nTo: someone@example.org\r\nSubject: {subject}\r\n"
        f"Date: Mon, 30 Nov 2026 10:00:00 +0000\r\nMessage-ID: <e{time.time_ns()}@example.org>\r\n\r\nHello\r\n"
    ).encode()


@pytest.fixture
def operator(empty_account: Account, tmp_path: Path, store_url: str) -> Iterator[Operator]:
    """The account's operator with a store of each kind (SQLite, PostgreSQL); retries every second."""
    with operating(empty_account, store_url, tmp_path, IMAP_MCP_WEBHOOK_RETRY_INTERVAL="1") as running:
        yield running


def stored_bodies(store_url: str, account: str) -> list[str]:
    with Store(store_url).transaction() as tx:
        rows = tx.all("SELECT body FROM webhook_events WHERE account = ? ORDER BY sequence", account)
    return [str(body) for (body,) in rows]


def add_plain_event(store_url: str, account: str, subject: str) -> dict[str, object]:
    """An event as a version before the encryption stored it: its JSON body in clear text."""
    with Store(store_url).transaction() as tx:
        row = load_row(tx, account)
        assert row is not None
        sequence = row.last_sequence + 1
        data = {"account": account, "mailbox": "INBOX", "uid": 1, "from": SENDER, "subject": subject}
        event = {"type": "message.received", "timestamp": rfc3339(time.time()), "sequence": sequence, "data": data}
        tx.run(
            "INSERT INTO webhook_events (account, sequence, webhook_id, created_at, body) VALUES (?, ?, ?, ?, ?)",
            account,
            sequence,
            f"msg_plain{sequence}",
            time.time(),
            json.dumps(event, separators=(",", ":")),
        )
        tx.run("UPDATE webhooks SET last_sequence = ? WHERE account = ?", sequence, account)
    return event


@pytest.mark.slow
def test_a_new_events_sender_and_subject_are_stored_encrypted_and_delivered_in_clear(operator: Operator) -> None:
    account = operator.account.imap_settings().account
    with Receiver("") as receiver:
        receiver.secret = operator.set_webhook(receiver.url())
        operator.start_watcher()
        operator.wait_until_watching()
        append_message(operator.account, mail(SUBJECT))
        [delivery] = receiver.wait_for(1)
    assert delivery.event["data"]["subject"] == SUBJECT and delivery.event["data"]["from"] == SENDER
    [body] = stored_bodies(operator.store_url, account)
    assert body.startswith(PREFIX)
    for clear in (SUBJECT, "mallory-4c1e", "Mallory"):
        assert clear not in body


@pytest.mark.slow
def test_events_stored_in_clear_by_an_earlier_version_are_delivered_then_encrypted(operator: Operator) -> None:
    account = operator.account.imap_settings().account
    with Receiver("") as receiver:
        receiver.secret = operator.set_webhook(receiver.url())
        old = add_plain_event(operator.store_url, account, "Kept in clear 5a7b")
        operator.start_watcher()
        operator.wait_until_watching()
        [first] = receiver.wait_for(1)
        assert first.event == old and first.webhook_id == "msg_plain1"
        append_message(operator.account, mail(SUBJECT))  # the watcher adds an event: the old one is encrypted too
        receiver.wait_for(2)
    bodies = stored_bodies(operator.store_url, account)
    assert len(bodies) == 2 and all(body.startswith(PREFIX) for body in bodies)
    assert not any("Kept in clear" in body or SUBJECT in body for body in bodies)


def test_webhook_set_encrypts_the_events_kept_in_clear(operator: Operator) -> None:
    operator.set_webhook("https://hooks.example.net/x")
    account = operator.account.imap_settings().account
    add_plain_event(operator.store_url, account, "Kept in clear 0e4d")
    operator.set_webhook("https://hooks.example.net/y")
    [body] = stored_bodies(operator.store_url, account)
    assert body.startswith(PREFIX) and "Kept in clear" not in body


def test_an_event_no_key_opens_fails_its_delivery_saying_so_and_is_kept(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str], store: Store
) -> None:
    """Events queued under a key no longer in the ring: the attempt fails with a reason, nothing is lost."""
    save_webhook()
    add_events(store, hook_settings, 1, time.time())
    other = new_key()
    save_webhook(with_keys=[other])  # the URL readable with the new ring, the event not
    rotated = WebhookSettings(store_url=hook_settings.store_url, store_keys=(Secret(other),))
    assert deliver_one(store, StoreCipher([other]), rotated, ACCOUNT)
    with store.transaction() as tx:
        row = load_row(tx, ACCOUNT)
    assert row is not None and row.delivered_sequence == 0 and row.consecutive_failures == 1
    assert row.last_error is not None and "IMAP_MCP_STORE_KEYS" in row.last_error
    assert len(stored_bodies(hook_settings.store_url, ACCOUNT)) == 1


def test_without_a_store_key_no_event_is_added(
    hook_settings: WebhookSettings, save_webhook: Callable[..., str]
) -> None:
    """Rather than keep a sender and subject in clear text, the watcher adds nothing (and moves no mark)."""
    save_webhook()
    with pytest.raises(Unreadable, match="IMAP_MCP_STORE_KEYS is not set"):
        add_events(Store(hook_settings.store_url), WebhookSettings(store_url=hook_settings.store_url), 1, time.time())
    assert stored_bodies(hook_settings.store_url, ACCOUNT) == []
