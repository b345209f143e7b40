"""A journal vouches for the messages that left only when every NOOP since the state in question was
heard in full and the STATUS agreed with where the last one ended."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from harness import Account
from imapclient import IMAPClient

from imap_mcp.server.imap import mailbox_state
from imap_mcp.server.imap.mailbox_state import (
    Journal,
    MailboxState,
    enable_qresync,
    noop_then_status,
    told_vanished,
)
from imap_mcp.server.imap.pool import examine
from imap_mcp.server.imap.uid_sets import size


def state(modseq: int) -> MailboxState:
    return MailboxState(uidvalidity=1, uidnext=100, messages=50, highestmodseq=modseq)


def test_batches_from_noops_that_ended_after_the_state_asked_about_are_given() -> None:
    journal = Journal(since=10)
    journal.note({3}, reached=12)
    journal.synced(12, state(12))
    journal.note({5, 6}, reached=15)
    journal.synced(15, state(15))
    assert journal.vanished_since(10, state(15)) == {3, 5, 6}
    assert journal.vanished_since(12, state(15)) == {5, 6}  # 3 left no later than 12: already gone then
    assert journal.vanished_since(15, state(15)) == set()


def test_no_answer_before_the_journal_began_or_when_the_status_moved_on() -> None:
    journal = Journal(since=10)
    journal.note({3}, reached=12)
    journal.synced(12, state(12))
    assert journal.vanished_since(9, state(12)) is None  # something may have left between 9 and 10
    assert journal.vanished_since(10, state(13)) is None  # the STATUS is past where the NOOP ended


def test_a_noop_that_does_not_say_where_it_ended_vouches_for_nothing() -> None:
    journal = Journal(since=10)
    journal.note({3}, reached=None)
    journal.synced(None, state(12))
    assert journal.vanished_since(10, state(12)) is None
    journal.note({4}, reached=14)
    journal.synced(14, state(14))
    assert journal.vanished_since(10, state(14)) == {3, 4}  # an undated batch is always included


def test_too_much_news_starts_the_journal_again_from_the_next_noop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mailbox_state, "MAX_TOLD", 3)
    journal = Journal(since=10)
    journal.note({1, 2}, reached=11)
    journal.synced(11, state(11))
    journal.note({3, 4}, reached=12)  # four in all: more than it keeps
    assert journal.since is None and journal.batches == []
    journal.synced(12, state(12))
    assert journal.vanished_since(11, state(12)) is None  # 3 and 4 are not known any more
    journal.note({5}, reached=13)
    journal.synced(13, state(13))
    assert journal.vanished_since(12, state(13)) == {5}


def test_a_uid_set_is_counted_without_listing_it() -> None:
    assert size("1:4294967295") == 4294967295
    assert size("7,9:11,20:18") == 1 + 3 + 3


def test_vanished_responses_naming_billions_of_uids_are_not_listed() -> None:
    """A hostile or broken server's VANISHED is counted before it is listed (no IMAP server sends this)."""
    responses: dict[str, list[bytes]] = {"VANISHED": [b"(EARLIER) 1:4294967295"]}
    client: Any = SimpleNamespace(_imap=SimpleNamespace(untagged_responses=responses))
    assert told_vanished(client) is None and "VANISHED" not in responses
    responses["VANISHED"] = [b"5", b"(EARLIER) 7:9"]
    assert told_vanished(client) == {5, 7, 8, 9}


def expunge_newest(account: Account) -> int:
    """Expunge the newest message as another mail client would; its UID."""
    other = account.imap()
    try:
        other.select_folder("INBOX")
        uid: int = max(other.search(["ALL"]))
        other.add_flags([uid], [b"\\Deleted"])
        other.uid_expunge([uid])
        return uid
    finally:
        other.logout()


@pytest.fixture
def qresync_client(account: Account) -> Iterator[IMAPClient]:
    client = account.imap()
    enable_qresync(client)
    yield client
    client.logout()


def test_a_kept_examined_session_names_what_left(account: Account, qresync_client: IMAPClient) -> None:
    """Dovecot's NOOP says which HIGHESTMODSEQ it reached, so its journal vouches."""
    examined = examine(qresync_client, "INBOX")
    assert examined.journal is not None and examined.state is not None
    before = noop_then_status(qresync_client, "INBOX", examined.journal).state
    assert before is not None
    gone = expunge_newest(account)
    after = noop_then_status(qresync_client, "INBOX", examined.journal).state
    assert after is not None and examined.journal.vanished_since(before.highestmodseq, after) == {gone}


def test_a_session_that_selected_the_mailbox_again_does_not_vouch(account: Account, qresync_client: IMAPClient) -> None:
    """A SELECT starts a new view: what left before it is never told to the session."""
    examined = examine(qresync_client, "INBOX")
    assert examined.journal is not None
    before = noop_then_status(qresync_client, "INBOX", examined.journal).state
    assert before is not None
    expunge_newest(account)
    qresync_client.select_folder("INBOX", readonly=True)  # e.g. an operation that opened it itself
    after = noop_then_status(qresync_client, "INBOX", examined.journal).state
    assert after is not None and examined.journal.vanished_since(before.highestmodseq, after) is None
    # it vouches again from the next NOOP that says where it ended (Dovecot says so when something changed)
    expunge_newest(account)
    later = noop_then_status(qresync_client, "INBOX", examined.journal).state
    assert later is not None and examined.journal.vanished_since(after.highestmodseq, later) is None
    gone = expunge_newest(account)
    latest = noop_then_status(qresync_client, "INBOX", examined.journal).state
    assert latest is not None and examined.journal.vanished_since(later.highestmodseq, latest) == {gone}
