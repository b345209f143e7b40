"""The IMAP side of sending, on Dovecot: the original of a reply, the Sent record, `\\Answered`."""

from __future__ import annotations

import datetime as dt

import pytest
from harness import Account
from imapclient import IMAPClient

from imap_mcp.server.imap.message_ids import MessageRef, StaleMessageId
from imap_mcp.server.outgoing.compose import Draft as OutgoingDraft
from imap_mcp.server.outgoing.compose import build_message, parse_address, parse_recipients, wire_bytes
from imap_mcp.server.outgoing.sent_mailbox import (
    SENDING,
    SentCopy,
    append_sent_copy,
    claim_sent_copy,
    earliest_copy,
    fetch_original,
    finish_sent_copy,
    mark_answered,
    remove_sent_copy,
    sent_copy_exists,
    sent_mailbox,
)
from imap_mcp.server.reading.reader import MessageGone


@pytest.fixture
def sent(account: Account) -> str:
    """The Sent mailbox of `account`, as its server names it."""
    return account.mailbox("Sent")


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


def test_the_sent_mailbox_is_found_by_its_role(client: IMAPClient, sent: str) -> None:
    assert sent_mailbox(client) == sent


def test_a_filed_copy_is_seen_and_found_by_its_message_id(client: IMAPClient, sent: str) -> None:
    draft = OutgoingDraft(
        sender=parse_address("demo@example.org", "From"),
        recipients=parse_recipients(["alice@example.com"], bcc=["eve@example.org"]),
        subject="Lunch",
        body="Noon?\n",
    )
    message_id = "<abc.imap-mcp@example.org>"
    assert not sent_copy_exists(client, sent, message_id)
    when = dt.datetime(2026, 11, 2, 12, 0, tzinfo=dt.UTC)
    append_sent_copy(client, sent, wire_bytes(build_message(draft, message_id, when)), when)
    assert sent_copy_exists(client, sent, message_id)
    assert not sent_copy_exists(client, sent, "<other.imap-mcp@example.org>")
    [uid] = client.search(["HEADER", "Message-ID", message_id])
    fetched = client.fetch([uid], ["FLAGS", "BODY.PEEK[HEADER.FIELDS (BCC)]"])[uid]
    assert b"\\Seen" in fetched[b"FLAGS"]
    bcc = next(v for k, v in fetched.items() if k.startswith(b"BODY[HEADER.FIELDS"))  # Courier quotes BCC
    assert b"eve@example.org" in bcc


def test_the_original_is_marked_answered(client: IMAPClient) -> None:
    ref = ref_of(client, "INBOX", "Team lunch on Friday?")
    mark_answered(client, ref)
    client.select_folder("INBOX", readonly=True)
    assert set(client.get_flags([ref.uid])[ref.uid]) == {b"\\Flagged", b"\\Answered"}


def _lunch(message_id: str) -> bytes:
    draft = OutgoingDraft(
        sender=parse_address("demo@example.org", "From"),
        recipients=parse_recipients(["alice@example.com"]),
        subject="Lunch",
        body="Noon?\n",
    )
    return wire_bytes(build_message(draft, message_id, dt.datetime.now(dt.UTC)))


def test_the_earliest_claim_wins_and_a_later_one_is_removed_exactly(client: IMAPClient, sent: str) -> None:
    message_id, when = "<claim.imap-mcp@example.org>", dt.datetime.now(dt.UTC)
    first = claim_sent_copy(client, sent, _lunch(message_id), when)
    second = claim_sent_copy(client, sent, _lunch(message_id), when)
    assert first is not None and second is not None and first.uid < second.uid
    assert earliest_copy(client, sent, message_id) == SentCopy(first.uid, in_progress=True)
    remove_sent_copy(client, second)
    finish_sent_copy(client, first)
    client.select_folder(sent, readonly=True)
    assert client.search(["HEADER", "Message-ID", message_id]) == [first.uid]
    assert SENDING not in client.get_flags([first.uid])[first.uid]
    assert earliest_copy(client, sent, message_id) == SentCopy(first.uid, in_progress=False)
    assert earliest_copy(client, sent, "<other.imap-mcp@example.org>") is None


def test_without_uidplus_nothing_is_claimed(client: IMAPClient, sent: str) -> None:
    client._cached_capabilities = tuple(c for c in client.capabilities() if c != b"UIDPLUS")
    assert claim_sent_copy(client, sent, _lunch("<x.imap-mcp@example.org>"), dt.datetime.now(dt.UTC)) is None
    client.select_folder(sent, readonly=True)
    assert client.search(["HEADER", "Message-ID", "<x.imap-mcp@example.org>"]) == []
