"""The IMAP side of sending, on the matrix: the original of a reply, the Sent copy, `\\Answered`, read back."""

from __future__ import annotations

import datetime as dt

import pytest
from harness import Account
from imapclient import IMAPClient

from imap_mcp.server.imap.message_ids import MessageRef, StaleMessageId
from imap_mcp.server.outgoing.compose import Draft as OutgoingDraft
from imap_mcp.server.outgoing.compose import build_message, parse_address, parse_recipients, wire_bytes
from imap_mcp.server.outgoing.sent_mailbox import (
    ANSWERED,
    SEEN,
    fetch_original,
    file_sent_copy,
    mark_original,
    sent_mailbox,
)
from imap_mcp.server.reading.reader import MessageGone

pytestmark = pytest.mark.matrix


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


def test_a_filed_copy_is_read_back_as_seen_with_its_bcc(client: IMAPClient, sent: str) -> None:
    draft = OutgoingDraft(
        sender=parse_address("demo@example.org", "From"),
        recipients=parse_recipients(["alice@example.com"], bcc=["eve@example.org"]),
        subject="Lunch",
        body="Noon?\n",
    )
    message_id = "<abc.imap-mcp@example.org>"
    when = dt.datetime(2026, 11, 2, 12, 0, tzinfo=dt.UTC)
    filed = file_sent_copy(client, sent, wire_bytes(build_message(draft, message_id, when)), when, message_id)
    client.select_folder(sent, readonly=True)
    [uid] = client.search(["HEADER", "Message-ID", message_id])
    fetched = client.fetch([uid], ["FLAGS", "BODY.PEEK[HEADER.FIELDS (BCC)]"])[uid]
    assert (filed.uid, filed.kept(SEEN)) == (uid, True)
    assert b"\\Seen" in fetched[b"FLAGS"]
    bcc = next(v for k, v in fetched.items() if k.startswith(b"BODY[HEADER.FIELDS"))  # Courier quotes BCC
    assert b"eve@example.org" in bcc


def test_the_original_is_marked_answered_and_read_back(client: IMAPClient) -> None:
    ref = ref_of(client, "INBOX", "Team lunch on Friday?")
    assert mark_original(client, ref, ANSWERED) is True
    client.select_folder("INBOX", readonly=True)
    assert set(client.get_flags([ref.uid])[ref.uid]) == {b"\\Flagged", b"\\Answered"}
