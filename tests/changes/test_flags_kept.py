"""set_message_flags and save_draft report what the server kept, read back; imap-mcp's own keywords are off limits."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import pytest
from harness import Account, error_text, message_ids, served, structured
from keyword_dropping import KeywordDroppingServer

from imap_mcp.server.config import Settings

pytestmark = pytest.mark.anyio


@contextlib.contextmanager
def keeping_no_keyword(account: Account, claim_keywords: bool) -> Iterator[Settings]:
    """Settings that reach the account through a server that takes keywords and keeps none (saying so, or not)."""
    with KeywordDroppingServer(account.dovecot.port, claim_keywords=claim_keywords) as server:
        yield Settings(imap=dataclasses.replace(account.imap_settings("none"), port=server.port))


def flags_of(account: Account, uid: int) -> set[bytes]:
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        return set(client.get_flags([uid])[uid]) - {b"\\Recent"}
    finally:
        client.logout()


def keywords_of(account: Account, uid: int) -> set[bytes]:
    return {flag for flag in flags_of(account, uid) if not flag.startswith(b"\\")}


@pytest.mark.parametrize("flag", ["$ImapMcpListed", "$imapmcpsending", "$IMAPMCPHandedOver", "$ImapMcpAnything"])
@pytest.mark.parametrize("side", ["add", "remove"])
async def test_imap_mcps_own_keywords_cannot_be_set_or_cleared(account: Account, flag: str, side: str) -> None:
    ids = message_ids(account, "INBOX")[:1]
    async with served(account) as client:
        result = await client.call_tool("set_message_flags", {"ids": ids, side: [flag]})
    assert "imap-mcp's own keywords" in error_text(result)
    assert keywords_of(account, 1) == set()


async def test_a_keyword_the_mailbox_says_it_does_not_keep_is_refused_before_anything_changes(
    account: Account,
) -> None:
    ids = message_ids(account, "INBOX")[:1]
    before = flags_of(account, 1)
    with keeping_no_keyword(account, claim_keywords=False) as settings:
        async with served(settings) as client:
            result = await client.call_tool("set_message_flags", {"ids": ids, "add": ["\\Flagged", "Work"]})
    assert "does not keep Work" in error_text(result) and "Nothing was changed" in error_text(result)
    assert flags_of(account, 1) == before and b"\\Flagged" not in before


async def test_a_keyword_the_server_drops_is_reported_not_kept_never_added(account: Account) -> None:
    ids = message_ids(account, "INBOX")[:2]
    with keeping_no_keyword(account, claim_keywords=True) as settings:
        async with served(settings) as client:
            result = structured(await client.call_tool("set_message_flags", {"ids": ids, "add": ["\\Flagged", "Work"]}))
    assert (result["added"], result["not_kept"], result["count"]) == (["\\Flagged"], ["Work"], 2)
    assert keywords_of(account, 1) == set()


async def test_flags_added_and_removed_are_read_back(account: Account) -> None:
    ids = message_ids(account, "INBOX")[:1]
    async with served(account) as client:
        added = structured(await client.call_tool("set_message_flags", {"ids": ids, "add": ["Work", "\\Seen"]}))
        removed = structured(await client.call_tool("set_message_flags", {"ids": ids, "remove": ["Work"]}))
    assert (added["added"], added["not_kept"]) == (["Work", "\\Seen"], [])
    assert (removed["removed"], removed["not_kept"]) == (["Work"], [])


async def test_a_saved_draft_reports_the_flags_the_server_kept(account: Account) -> None:
    draft = {"to": ["alice@example.com"], "subject": "Plan", "body": "Draft text.\n"}
    async with served(account) as client:
        saved = structured(await client.call_tool("save_draft", draft))
    assert saved["flags"] == ["\\Draft", "\\Seen"] and saved["id"] is not None
