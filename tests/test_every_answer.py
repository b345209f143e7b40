"""Every tool, every command, an answer imap-mcp does not expect: the result is always our own text.

For each tool on each matrix server a recording run logs the IMAP commands the call sends (through
`command_log.CommandLog`, in plain text in front of the server); then, for each of those commands,
the same call runs again while the proxy spoils that command's completion: a `BAD` or a `NO` with
control characters in its text, or a connection cut right there; and each SEARCH's answer emptied (no UID at
all), which a helper lookup (`imap.helper_lookups`) must take as finding nothing. The server did run the command;
imap-mcp is told otherwise.

Whatever happens then — a refusal, a retry on a fresh connection that succeeds, an answer that
degrades — the result is never the SDK's bare "Error executing tool", never our own internal-error
text (which would be a bug that no layer mapped), and never holds a control character of the
server's. Guarded tools run both rounds (a person approves), so the answer's commands are spoiled too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from command_log import CommandLog, Spoil
from harness import CRASH, Account, Person, append_message, message_ids, plain_mail, served
from mcp import Client
from mcp.types import CallToolResult
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.config import Settings, load_settings
from imap_mcp.server.imap.pool import ImapPool

pytestmark = [pytest.mark.anyio, pytest.mark.matrix, pytest.mark.slow]

#: a control character of the server's, shown raw
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: how the commands' answers are spoiled, in turn (a NO takes the same path as a BAD: search_messages gets it too)
SPOILS: tuple[Spoil, ...] = ("BAD", "cut")
#: the most commands of one call that are spoiled one after the other (the rest repeat the same steps)
MOST_COMMANDS = 10
#: what a bug no layer mapped reads like (`tools.registry.internal_error`)
INTERNAL = "failed inside imap-mcp"

Arguments = Callable[[Account, int], dict[str, Any]]


def fresh_message(account: Account, run: int) -> str:
    """The id of a new INBOX message of this run's own (a change consumes what it acts on)."""
    uid = append_message(account, plain_mail(f"run {run}"))
    return next(i for i in message_ids(account, "INBOX") if i.endswith(f".{uid}"))


def fresh_draft(account: Account, run: int) -> str:
    uid = append_message(
        account,
        f"From: demo@example.org\r\nTo: alice@example.com\r\nSubject: draft {run}\r\n\r\nhello\r\n".encode(),
        "Drafts",
        (b"\\Draft",),
    )
    return next(i for i in message_ids(account, "Drafts") if i.endswith(f".{uid}"))


CALLS: dict[str, Arguments] = {
    "list_mailboxes": lambda account, run: {"counts": True},
    "search_messages": lambda account, run: {"from": "bob"},
    "get_message": lambda account, run: {"id": message_ids(account, "INBOX")[0]},
    "get_attachments": lambda account, run: {"id": message_ids(account, "INBOX")[3]},
    "get_thread": lambda account, run: {"id": message_ids(account, "INBOX")[6], "include_bodies": True},
    "list_new_messages": lambda account, run: {},
    "set_message_flags": lambda account, run: {"ids": [fresh_message(account, run)], "add": ["\\Flagged"]},
    "save_draft": lambda account, run: {"to": ["alice@example.com"], "subject": f"s{run}", "body": "x"},
    "delete_messages": lambda account, run: {"ids": [fresh_message(account, run)]},
    "move_messages": lambda account, run: {"ids": [fresh_message(account, run)], "destination": "Archive"},
    "manage_mailbox": lambda account, run: {"action": "create", "mailbox": account.mailbox(f"Made{run}")},
    "send_message": lambda account, run: {"to": ["alice@example.com"], "subject": f"s{run}", "body": "x"},
    "reply_to_message": lambda account, run: {"id": fresh_message(account, run), "body": "x"},
    "send_draft": lambda account, run: {"id": fresh_draft(account, run)},
    "update_draft": lambda account, run: {"id": fresh_draft(account, run), "to": ["alice@example.com"], "body": "y"},
    "forward_message": lambda account, run: {"id": fresh_message(account, run), "to": ["alice@example.com"]},
    "get_server_info": lambda account, run: {},
}


@contextlib.asynccontextmanager
async def logged(account: Account, smtp: CaptureSMTP) -> AsyncIterator[tuple[Client, CommandLog]]:
    """A client (2026-07-28, a person who approves) of a server reaching `account` through a command log."""
    with CommandLog(account.server.port) as log:
        base = load_settings(account.env(**smtp.env(), SMTP_FROM=SENDER, IMAP_TIMEOUT="10"))
        imap = dataclasses.replace(account.imap_settings("none"), port=log.port, timeout=10)
        pool = ImapPool(imap)
        settings: Settings = dataclasses.replace(base, imap=imap)
        try:
            async with served(settings, pool=pool, mode="2026-07-28", elicitation_callback=Person()) as client:
                yield client, log
        finally:
            pool.close_all()


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    """The call; for a guarded tool both rounds (the SDK client shows the question to the person, who says yes)."""
    return await client.call_tool(tool, arguments)


def assert_ours(tool: str, result: CallToolResult, where: str) -> None:
    text = " ".join(getattr(item, "text", "") for item in result.content)
    assert not CRASH.fullmatch(text), f"{tool}, {where}: the SDK's bare error: {text}"
    assert INTERNAL not in text, f"{tool}, {where}: an exception no layer mapped: {text}"
    assert not CONTROL.search(text + str(result.structured_content)), f"{tool}, {where}: raw control characters"


@pytest.mark.parametrize("tool", CALLS)
async def test_an_unexpected_answer_to_any_command_of_any_tool_is_answered_in_our_words(
    account: Account, tool: str
) -> None:
    arguments = CALLS[tool]
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        async with logged(account, smtp) as (client, log):
            await client.call_tool("list_mailboxes", {})  # logged in; the roles known, as in a session
            log.take()
            assert_ours(tool, await call(client, tool, arguments(account, 0)), "recording")
            commands = log.take()
            assert commands, f"{tool} sent no IMAP command"
            spoiled: list[tuple[int, Spoil]] = [
                (position, SPOILS[position % len(SPOILS)]) for position in range(min(len(commands), MOST_COMMANDS))
            ]
            if tool == "search_messages":
                spoiled += [(position, "NO") for position in range(len(commands))]
            # every SEARCH answered with no UID at all (a helper lookup's, such as Sent's for the look-alike judge)
            spoiled += [(position, "empty") for position, sent in enumerate(commands) if sent.name.endswith("SEARCH")]
            for run, (position, how) in enumerate(spoiled, start=1):
                given = arguments(account, run)  # before spoiling: its own set-up goes straight to the server
                log.take()
                log.spoil(position, how)
                result = await call(client, tool, given)
                assert_ours(tool, result, f"{how} to command {position} ({commands[position].name})")
