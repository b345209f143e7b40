"""A part's raw pieces: an answer without the part's content is a message gone, never an empty attachment.

A message expunged by another session can still be listed in this one, its sections answered NIL or empty
(Mailutils answers `BODY[1]` NIL so). No server of the matrix answers so on the path a part is read by, so the
answers are given here in place of `fetch`'s: the one fault this module cannot get from a real server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pytest

from imap_mcp.server.imap.session import Session
from imap_mcp.server.reading import attachments
from imap_mcp.server.reading.reader import MessageGone

UID = 10


def answering(answer: dict[int, dict[bytes, Any]]) -> Any:
    def fetch(client: Session, uids: Sequence[int], items: Sequence[str]) -> dict[int, dict[bytes, Any]]:
        assert list(uids) == [UID] and items[0].startswith("BODY.PEEK[2]<0.")
        return answer

    return fetch


@pytest.mark.parametrize(
    ("answer", "size"),
    [
        ({UID: {b"BODY[2]<0>": None}}, 0),  # NIL
        ({UID: {b"BODY[2]<0>": b""}}, 5),  # empty, though the part has bytes
        ({}, 0),  # the message not in the answer at all
    ],
    ids=["nil", "empty-for-a-part-with-bytes", "absent"],
)
def test_an_answer_without_the_content_is_a_message_gone(
    monkeypatch: pytest.MonkeyPatch, answer: dict[int, dict[bytes, Any]], size: int
) -> None:
    monkeypatch.setattr(attachments, "fetch", answering(answer))
    with pytest.raises(MessageGone, match="deleted or moved"):
        list(attachments.section_pieces(cast(Session, object()), UID, "2", size=size))


def test_an_empty_part_is_read_as_empty_and_a_part_as_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attachments, "fetch", answering({UID: {b"BODY[2]<0>": b""}}))
    assert list(attachments.section_pieces(cast(Session, object()), UID, "2", size=0)) == []
    monkeypatch.setattr(attachments, "fetch", answering({UID: {b"BODY[2]<0>": b"abc"}}))
    assert list(attachments.section_pieces(cast(Session, object()), UID, "2", size=3)) == [b"abc"]
