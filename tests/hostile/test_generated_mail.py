"""Generated hostile mail against Dovecot: every reading tool answers, and nothing after it changes.

For each message `hostile_mail.messages()` generates, appended to the account as a sender would
have it delivered: search_messages lists it (summarised, or as "unreadable" with its id) next to
an ordinary message, get_message and get_attachments return a result or an error that says what
is wrong (never a crash: the SDK's bare "Error executing tool"), list_mailboxes counts it, and the ordinary
message still reads exactly as before. Hypothesis shrinks any failure to a small message.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
from harness import Account, error_text, message_ids, served, structured
from hostile.hostile_mail import messages
from hypothesis import HealthCheck, given, settings
from mcp import Client

pytestmark = pytest.mark.anyio

#: examples per CI run; raise it locally to keep looking (each takes well under a second)
EXAMPLES = 30
MAX_CHARS = 2_000
ORDINARY = b"From: friend@example.com\r\nSubject: ordinary\r\n\r\nAn ordinary message.\r\n"
RECEIVED = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)


def answered(result: Any) -> dict[str, Any] | None:
    """The structured result, or None for a tool error that says what went wrong (never a crash)."""
    if result.is_error:
        assert "cannot be read" in error_text(result)
        return None
    return structured(result)


class Mailbox:
    """The test account's INBOX: an ordinary message, then each generated one, each received later."""

    def __init__(self, account: Account) -> None:
        self.account = account
        self.appended = 0
        self.append(ORDINARY)
        (self.ordinary_id,) = message_ids(account, "INBOX")

    def append(self, raw: bytes) -> str:
        client = self.account.imap()
        try:
            client.append("INBOX", raw, msg_time=RECEIVED + dt.timedelta(minutes=self.appended))
        finally:
            client.logout()
        self.appended += 1
        return message_ids(self.account, "INBOX")[-1]


@pytest.fixture
def inbox(empty_account: Account) -> Mailbox:
    return Mailbox(empty_account)


@pytest.fixture
async def client(inbox: Mailbox) -> AsyncIterator[Client]:
    """One server for every example: what one message does must not show in the calls of the next."""
    async with served(inbox.account) as connected:
        yield connected


async def check_every_reading_tool(client: Client, inbox: Mailbox, message_id: str) -> None:
    page = structured(await client.call_tool("search_messages", {"limit": 100}))
    listed = {m["id"]: m for m in page["messages"]}
    assert page["total"] == inbox.appended and message_id in listed and inbox.ordinary_id in listed
    assert listed[inbox.ordinary_id]["unreadable"] is None
    message = answered(await client.call_tool("get_message", {"id": message_id, "max_chars": MAX_CHARS}))
    if message is not None:
        assert len(message["body"]["text"]) <= MAX_CHARS and message["id"] == message_id
    answered(await client.call_tool("get_attachments", {"id": message_id}))
    boxes = structured(await client.call_tool("list_mailboxes", {"counts": True}))["mailboxes"]
    assert next(box for box in boxes if box["name"] == "INBOX")["messages"] == inbox.appended


async def check_unaffected(client: Client, inbox: Mailbox) -> None:
    ordinary = structured(await client.call_tool("get_message", {"id": inbox.ordinary_id}))
    assert ordinary["body"]["text"] == "An ordinary message.\n"
    assert ordinary["headers"]["from"] == "friend@example.com"


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(raw=messages())
async def test_every_reading_tool_answers_every_generated_message(client: Client, inbox: Mailbox, raw: bytes) -> None:
    message_id = inbox.append(raw)
    await check_every_reading_tool(client, inbox, message_id)
    await check_unaffected(client, inbox)
