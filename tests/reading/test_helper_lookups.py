"""Helper lookups degrade, never fail the tool (issue 39, break 1).

A reading tool's answer is the message or page asked for; around it, it looks up what only helps: the domains
the account has written to (read from Sent, for the look-alike judge), the role mailboxes a conversation is
looked for in, the size of a message's conversation. The line proxy (`command_log.CommandLog`) spoils the
answer of exactly that lookup's command, as a server outside the matrix answers: an empty `* SEARCH` where
the mailbox holds mail (a server that answers wrongly, or a Sent that lost mail between EXAMINE and SEARCH),
a BAD. The tool still answers, in full but for what the lookup would have given, and says why in `notes`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
from command_log import CommandLog, Spoil
from harness import Account, message_ids, served, structured
from mcp import Client

from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.imap.uid_sets import NO_UIDS, compress, expand, size

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def through_log(account: Account) -> AsyncIterator[tuple[Client, CommandLog]]:
    with CommandLog(account.server.port) as log:
        imap = dataclasses.replace(account.imap_settings("none"), port=log.port)
        pool = ImapPool(imap)
        try:
            async with served(dataclasses.replace(account.settings(), imap=imap), pool=pool) as client:
                yield client, log
        finally:
            pool.close_all()


def test_no_uids_is_a_set_that_names_nothing() -> None:
    assert compress([]) == NO_UIDS == ""
    assert expand(NO_UIDS) == [] and size(NO_UIDS) == 0


async def call(account: Account, tool: str, arguments: dict[str, Any], spoil: tuple[Spoil, str]) -> dict[str, Any]:
    """`tool`'s structured result, called first thing on a fresh server, with the answer to its first command
    named `spoil[1]` spoiled as `spoil[0]` says; the spoiled command must have been sent."""
    async with through_log(account) as (client, log):
        how, named = spoil
        log.spoil(0, how, named)
        result = structured(await client.call_tool(tool, arguments))
    assert [command.name for command in log.spoiled] == [named]
    return result


async def test_an_empty_search_of_sent_is_no_known_domain_and_no_failure(account: Account) -> None:
    """The look-alike judge reads Sent's newest messages by message number (`UID SEARCH 1:n`); a server that
    answers it with an empty `* SEARCH` gave no UIDs: nothing is fetched, and the tools answer as usual."""
    page = await call(account, "search_messages", {"from": "bob"}, ("empty", "UID SEARCH"))
    assert page["total"] == 2 and page["notes"] == []
    message = await call(account, "get_message", {"id": message_ids(account, "INBOX")[0]}, ("empty", "UID SEARCH"))
    assert message["body"] and message["notes"] == []


@pytest.mark.parametrize("how", ["BAD", "NO"])
async def test_an_unusable_answer_from_sent_leaves_the_known_domains_out_with_a_note(
    account: Account, how: Spoil
) -> None:
    page = await call(account, "search_messages", {"from": "bob"}, (how, "UID SEARCH"))
    assert page["total"] == 2 and len(page["messages"]) == 2
    [note] = page["notes"]
    assert (
        note.startswith("The domains this account has written to (read from Sent") and "could not be looked up" in note
    )


async def test_a_thread_count_that_cannot_be_looked_up_is_left_out_with_a_note(account: Account) -> None:
    """include_thread_count searches the other mailboxes for the conversation; a BAD there leaves `thread` out."""
    arguments = {"id": message_ids(account, "INBOX")[6], "include_thread_count": True}
    message = await call(account, "get_message", arguments, ("BAD", "UID SEARCH"))
    assert message["body"] and message["thread"] is None
    [note] = message["notes"]
    assert note.startswith("The size of this message's conversation (thread) could not be looked up")


async def test_a_thread_whose_role_mailboxes_cannot_be_listed_is_its_own_mailboxs_and_says_so(
    account: Account,
) -> None:
    thread = await call(account, "get_thread", {"id": message_ids(account, "INBOX")[6]}, ("BAD", "LIST"))
    assert thread["mailboxes"] == ["INBOX"] and thread["complete"] is False and thread["total"] >= 1
    assert any(bound.startswith("The mailboxes besides its own to look in") for bound in thread["bounded_by"])
