"""Reading never marks anything read, asserted on the wire: every reading tool opens mailboxes with EXAMINE, never
SELECT, and fetches every body with `BODY.PEEK`, never `BODY[…]` or `RFC822`/`RFC822.TEXT`.

Each layer alone would hide the other from a test that only looks at the flags afterwards (a body fetched
without PEEK in an examined mailbox sets no flag; SELECT with only PEEK fetches sets none either), so the
commands themselves are read, through the logging proxy (`command_log.CommandLog`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest
from command_log import Command, CommandLog
from harness import Account, message_ids, served

from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.tools.registry import TOOLS

pytestmark = pytest.mark.anyio

#: a fetch item that sets \Seen: BODY[...] without PEEK, RFC822 or RFC822.TEXT (RFC 3501 6.4.5)
SETS_SEEN = re.compile(r"(?<![.\w])BODY\[|\bRFC822(?:\.TEXT)?(?![.\w])", re.IGNORECASE)

#: each reading tool's call on the sample mail, one that reads bodies where the tool can
CALLS: dict[str, Callable[[Account], dict[str, Any]]] = {
    "search_messages": lambda account: {"text": "the"},
    "get_message": lambda account: {"id": message_ids(account, "INBOX")[0]},
    "get_attachments": lambda account: {"id": message_ids(account, "INBOX")[3]},
    "get_thread": lambda account: {"id": message_ids(account, "INBOX")[6], "include_bodies": True},
}


def unseen(account: Account) -> list[int]:
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        return sorted(client.search("UNSEEN"))
    finally:
        client.logout()


def read_only_reading_tools() -> set[str]:
    return {spec.name for spec in TOOLS if spec.feature == "reading" and spec.read_only and spec.name in CALLS}


def test_every_read_only_reading_tool_is_checked() -> None:
    """list_new_messages writes its mark ($ImapMcpListed), so it selects; every other reading tool is here."""
    reading = {spec.name for spec in TOOLS if spec.feature == "reading"}
    assert read_only_reading_tools() == reading - {"list_new_messages"} == set(CALLS)


def setting_seen(commands: list[Command]) -> list[Command]:
    """The commands that open a mailbox read-write, or fetch an item that marks a message read."""
    return [
        command
        for command in commands
        if command.name == "SELECT" or (command.name.endswith("FETCH") and SETS_SEEN.search(command.arguments))
    ]


def test_the_pattern_tells_peeking_from_reading() -> None:
    def fetch(items: str) -> Command:
        return Command(0, "a1", "UID FETCH", f"1:* ({items})")

    assert setting_seen([fetch("BODY[1]"), fetch("RFC822"), fetch("body[TEXT]<0.100>"), fetch("RFC822.TEXT")]) == [
        fetch("BODY[1]"),
        fetch("RFC822"),
        fetch("body[TEXT]<0.100>"),
        fetch("RFC822.TEXT"),
    ]
    peeks = [fetch("BODY.PEEK[1]"), fetch("RFC822.SIZE"), fetch("RFC822.HEADER"), fetch("BODYSTRUCTURE FLAGS")]
    assert setting_seen(peeks) == []


@pytest.mark.parametrize("tool", sorted(CALLS))
async def test_a_reading_tool_examines_and_peeks(account: Account, tool: str) -> None:
    unseen_before = unseen(account)
    with CommandLog(account.server.port) as log:
        imap = dataclasses.replace(account.imap_settings("none"), port=log.port)
        pool = ImapPool(imap)
        try:
            async with served(dataclasses.replace(account.settings("none"), imap=imap), pool=pool) as client:
                result = await client.call_tool(tool, CALLS[tool](account))
        finally:
            pool.close_all()
        commands = log.take()
    assert not result.is_error, result.content
    assert any(command.name == "EXAMINE" for command in commands)
    assert any(command.name.endswith("FETCH") and "PEEK" in command.arguments for command in commands) or (
        tool == "search_messages"
    )
    assert setting_seen(commands) == []
    assert unseen(account) == unseen_before and unseen_before
