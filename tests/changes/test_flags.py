"""set_message_flags: system flags and keywords, never \\Deleted, never a question."""

from __future__ import annotations

import json

import pytest
from harness import Account, error_text, message_ids, served

from imap_mcp.server.tools.results import LISTED_IDS_MAX

pytestmark = pytest.mark.anyio


def flags_of(account: Account, uid: int) -> set[bytes]:
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        return set(client.get_flags([uid])[uid])
    finally:
        client.logout()


@pytest.mark.servers("dovecot", "cyrus", "courier", reason="Mailutils keeps no keywords (the test below)")
async def test_flags_and_keywords_are_added_and_removed(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    async with served(account) as client:
        added = await client.call_tool("set_message_flags", {"ids": ids[2:3], "add": ["\\seen", "\\Flagged", "Work"]})
        assert added.structured_content["added"] == ["\\Seen", "\\Flagged", "Work"]
        assert {b"\\Seen", b"\\Flagged", b"Work"} <= flags_of(account, 3)
        await client.call_tool("set_message_flags", {"ids": ids[2:3], "remove": ["\\Seen"]})
    assert b"\\Seen" not in flags_of(account, 3)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"add": ["\\Deleted"]}, "delete_messages"),
        ({"remove": ["\\deleted"]}, "delete_messages"),
        ({"add": ["\\Draft"]}, "is not allowed"),
        ({"add": ["two words"]}, "not a valid keyword"),
        ({}, "at least one flag"),
    ],
)
async def test_deleted_and_other_flags_are_refused(account: Account, args: dict[str, list[str]], said: str) -> None:
    ids = message_ids(account, "INBOX")
    async with served(account) as client:
        result = await client.call_tool("set_message_flags", {"ids": ids[:1], **args})
    assert result.is_error and said in result.content[0].text  # type: ignore[union-attr]
    assert b"\\Deleted" not in flags_of(account, 1)


@pytest.mark.matrix
async def test_flags_on_many_ids_change_those_that_exist_and_report_the_rest_missing(account: Account) -> None:
    from imap_mcp.server.imap.message_ids import MessageRef, decode_id

    existing = message_ids(account, "INBOX")[:1]
    unknown = [MessageRef("INBOX", decode_id(existing[0]).uidvalidity, uid).id for uid in range(1_000, 21_000)]
    async with served(account) as client:
        result = await client.call_tool("set_message_flags", {"ids": unknown + existing, "add": ["\\Flagged"]})
    content = result.structured_content
    assert content["ids"] == existing
    # bounded for a model: the first ids, the exact count, and the rest as UID ranges
    assert content["missing_ids"] == unknown[:LISTED_IDS_MAX] and content["missing_count"] == len(unknown)
    assert content["rest"] == "missing UIDs in 'INBOX': 1000:20999."
    assert len(result.content[0].text) + len(json.dumps(content)) < 20_000  # type: ignore[union-attr]
    assert b"\\Flagged" in flags_of(account, 1)


@pytest.mark.servers("mailutils", reason="keeps no keywords: PERMANENTFLAGS without \\*, a STORE of one answered BAD")
async def test_a_keyword_on_a_server_that_keeps_none_is_refused_before_anything_changes(account: Account) -> None:
    ids = message_ids(account, "INBOX")
    async with served(account) as client:
        said = error_text(await client.call_tool("set_message_flags", {"ids": ids[:1], "add": ["\\Flagged", "Work"]}))
    assert "does not keep Work" in said and "Nothing was changed" in said
    assert not {b"\\Flagged", b"Work"} & flags_of(account, 1)
