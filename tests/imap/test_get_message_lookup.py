"""Resolving message ids (or the deprecated mailbox + uid) into targets, and refusing stale ones."""

from __future__ import annotations

import pytest

from imap_mcp.server.imap.lookup import MessageSelection, check_selection, resolve_one, resolve_selections
from imap_mcp.server.imap.message_ids import InvalidMessageId, MessageRef, StaleMessageId, encode_id

INBOX_5 = encode_id(MessageRef("INBOX", 77, 5))
INBOX_9 = encode_id(MessageRef("INBOX", 77, 9))
ARCHIVE_2 = encode_id(MessageRef("Archive", 12, 2))


def test_ids_are_grouped_by_mailbox_in_first_seen_order_without_duplicates() -> None:
    targets = resolve_selections([INBOX_5, ARCHIVE_2, INBOX_9, INBOX_5], None, None)
    assert targets == [MessageSelection("INBOX", 77, (5, 9)), MessageSelection("Archive", 12, (2,))]


def test_the_deprecated_mailbox_and_uid_form_has_no_uidvalidity_of_its_own() -> None:
    assert resolve_one(None, "INBOX", 3) == MessageSelection("INBOX", None, (3,))
    assert check_selection(MessageSelection("INBOX", None, (3,)), 91) == [MessageRef("INBOX", 91, 3)]


@pytest.mark.parametrize(
    ("ids", "mailbox", "uids", "says"),
    [
        pytest.param([INBOX_5], "INBOX", [5], "not both", id="both-forms"),
        pytest.param(None, None, None, "message id", id="neither"),
        pytest.param(None, "INBOX", None, "message id", id="mailbox-without-uid"),
        pytest.param(None, "INBOX", [0], "not a UID", id="uid-zero"),
        pytest.param(None, "INBOX", [2**32], "not a UID", id="uid-too-big"),
        pytest.param(None, "INBOX", ["1:*"], "ranges such as 1:*", id="range"),
        pytest.param(["imap.x"], None, None, "not a message id", id="damaged-id"),
    ],
)
def test_a_bad_target_is_refused_with_what_to_do(
    ids: list[str] | None, mailbox: str | None, uids: list[object] | None, says: str
) -> None:
    with pytest.raises(InvalidMessageId, match=says):
        resolve_selections(ids, mailbox, uids)  # type: ignore[arg-type]


def test_an_id_from_before_a_uidvalidity_change_is_stale_and_says_search_again() -> None:
    with pytest.raises(StaleMessageId, match="Search again"):
        check_selection(resolve_one(INBOX_5, None, None), 78)
