"""The IMAP side of sending, on Dovecot: the original of a reply, the Sent record, `\\Answered`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from harness import Account
from imap_mcp.server.message_ids import MessageRef, StaleMessageId
from imap_mcp.server.message_reader import MessageGone
from imap_mcp.server.outgoing import Draft as OutgoingDraft
from imap_mcp.server.outgoing import build_message, parse_address, parse_recipients, wire_bytes
from imap_mcp.server.outgoing_mailbox import (
    append_sent_copy,
    fetch_original,
    mark_answered,
    sent_copy_exists,
    sent_mailbox,
)
from imapclient import IMAPClient


@pytest.fixture
def client(account: Account) -> Iterator[IMAPClient]:
    connection = account.imap()
    try:
        yield connection
    finally:
        connection.logout()


def ref_of(client: IMAPClient, mailbox: str, subject: str) -> MessageRef:
    status = client.select_folder(mailbox, readonly=True)
    [uid] = client.search(["SUBJECT", subject])
    return MessageRef(mailbox, int(status[b"UIDVALIDITY"]), uid)


def test_the_original_of_a_reply_is_read_without_marking_it_seen(client: IMAPClient) -> None:
    ref = ref_of(client, "INBOX", "Re: Project kickoff")
    original = fetch_original(client, ref)
    assert [a.addr_spec for a in original.sender] == ["bob@example.net"]
    assert [a.addr_spec for a in original.to] == ["demo@example.org", "alice@example.com"]
    assert [a.addr_spec for a in original.cc] == ["carol@example.com"]
    assert original.subject == "Re: Project kickoff"
    assert original.message_id is not None and original.references[-1:] != (original.message_id,)
    assert b"\\Seen" not in client.get_flags([ref.uid])[ref.uid]


def test_a_stale_or_vanished_original_is_refused(client: IMAPClient) -> None:
    ref = ref_of(client, "INBOX", "Quarterly report")
    with pytest.raises(StaleMessageId):
        fetch_original(client, MessageRef(ref.mailbox, ref.uidvalidity + 1, ref.uid))
    with pytest.raises(MessageGone, match="no longer in 'INBOX'"):
        fetch_original(client, MessageRef(ref.mailbox, ref.uidvalidity, 999_999))


def test_the_sent_mailbox_is_found_by_its_role(client: IMAPClient) -> None:
    assert sent_mailbox(client) == "Sent"


def test_a_filed_copy_is_seen_and_found_by_its_message_id(client: IMAPClient) -> None:
    draft = OutgoingDraft(
        sender=parse_address("demo@example.org", "From"),
        recipients=parse_recipients(["alice@example.com"], bcc=["eve@example.org"]),
        subject="Lunch",
        body="Noon?\n",
    )
    message_id = "<abc.imap-mcp@example.org>"
    assert not sent_copy_exists(client, "Sent", message_id)
    when = dt.datetime(2026, 11, 2, 12, 0, tzinfo=dt.UTC)
    append_sent_copy(client, "Sent", wire_bytes(build_message(draft, message_id, when)), when)
    assert sent_copy_exists(client, "Sent", message_id)
    assert not sent_copy_exists(client, "Sent", "<other.imap-mcp@example.org>")
    [uid] = client.search(["HEADER", "Message-ID", message_id])
    fetched = client.fetch([uid], ["FLAGS", "BODY.PEEK[HEADER.FIELDS (BCC)]"])[uid]
    assert b"\\Seen" in fetched[b"FLAGS"]
    assert b"eve@example.org" in fetched[b"BODY[HEADER.FIELDS (BCC)]"]


def test_the_original_is_marked_answered(client: IMAPClient) -> None:
    ref = ref_of(client, "INBOX", "Team lunch on Friday?")
    mark_answered(client, ref)
    client.select_folder("INBOX", readonly=True)
    assert set(client.get_flags([ref.uid])[ref.uid]) == {b"\\Flagged", b"\\Answered"}
