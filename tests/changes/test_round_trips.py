"""On the wire, through a logging proxy (`command_log.CommandLog`), on Dovecot: the IMAP commands of a guarded
change's two rounds, and that reading never selects a mailbox nor fetches a body without .PEEK (issue #27).

Round 1 (the question) plans the change: EXAMINE the source, FETCH which UIDs exist (with their
Message-IDs), one FETCH of what the dialog shows of them (`changes.facts`), and the destination's
state (STATUS, or for a copy and a move its EXAMINE and a SEARCH for those Message-IDs; a trash-delete
takes the Trash role from the connection's last LIST). Round 2 (the
approved answer) plans again, then SELECTs the source (a copy EXAMINEs it), runs the change and
UNSELECTs (leaving the mailbox without expunging, so a server that defers writes makes them now).
Issue #27 item 3 asks for at most 6 commands in round 2 (`ROUND_TWO_MOST`); a move sends one more since it
never duplicates what the destination holds (issue #39: EXAMINE and SEARCH of the destination instead of STATUS).

The answer follows the question at once here: the pool is told to NOOP an idle connection only
after an hour, so no test depends on how fast it runs (`bench/guarded.py` counts the NOOP a
connection idle for over 5 s gets, as when a person takes time to answer).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from command_log import Command, CommandLog, names
from harness import Account, Person, answer, ask, message_ids, served, structured
from imapclient import IMAPClient
from mcp import Client

from imap_mcp.server.config import Settings
from imap_mcp.server.imap.pool import ImapPool

pytestmark = [pytest.mark.anyio, pytest.mark.dovecot_only(reason="the command counts are Dovecot's")]

PLAN = ["EXAMINE", "UID FETCH"]
#: round 1 also reads what the dialog shows of the messages: one FETCH (INTERNALDATE RFC822.SIZE FLAGS BODYSTRUCTURE)
QUESTION = [*PLAN, "UID FETCH"]
#: per change: its tool's arguments besides the ids, round 1's commands, round 2's commands
#: the most IMAP commands the answer of an approved move, copy or delete may send on Dovecot
ROUND_TWO_MOST = 6
ROUNDS: dict[str, tuple[str, dict[str, Any], list[str], list[str]]] = {
    "move": (
        "move_messages",
        {"destination": "Archive"},
        [*QUESTION, "EXAMINE", "UID SEARCH"],
        [*PLAN, "EXAMINE", "UID SEARCH", "SELECT", "UID MOVE", "UNSELECT"],
    ),
    "copy": (
        "move_messages",
        {"destination": "Archive", "mode": "copy"},
        [*QUESTION, "EXAMINE", "UID SEARCH"],
        ["EXAMINE", "UID FETCH", "EXAMINE", "UID SEARCH", "EXAMINE", "UID COPY"],
    ),
    "trash": (
        "delete_messages",
        {},
        [*QUESTION, "STATUS"],  # the Trash role from the connection's last LIST, moments ago
        [*PLAN, "STATUS", "SELECT", "UID MOVE", "UNSELECT"],
    ),
    "delete permanently": (
        "delete_messages",
        {"permanent": True},
        QUESTION,
        [*PLAN, "SELECT", "UID STORE", "UID EXPUNGE", "UNSELECT"],
    ),
}
#: FETCH items that set \Seen (RFC 3501 6.4.5, RFC 3516): BODY[…], BINARY[…], RFC822 and RFC822.TEXT
SETS_SEEN = re.compile(r"\b(?:BODY|BINARY)\[|\bRFC822(?!\.(?:SIZE|HEADER)\b)", re.IGNORECASE)


@asynccontextmanager
async def logged_client(account: Account, log: CommandLog) -> AsyncIterator[Client]:
    """A 2026-07-28 client whose person approves, of a server reaching `account` in plain text through `log`,
    its pool's connection logged in already (the log then holds nothing)."""
    settings = dataclasses.replace(account.imap_settings("none"), port=log.port)
    pool = ImapPool(settings, check_after=3600)
    try:
        async with served(Settings(imap=settings), pool=pool, mode="2026-07-28", elicitation_callback=Person()) as c:
            await c.call_tool("list_mailboxes", {})
            log.take()
            yield c
    finally:
        pool.close_all()


@pytest.mark.parametrize("change", ROUNDS)
async def test_each_round_of_an_approved_change_sends_exactly_these_commands(account: Account, change: str) -> None:
    tool, arguments, question, done = ROUNDS[change]
    arguments = {**arguments, "ids": message_ids(account, "INBOX")[:1]}
    with CommandLog(account.dovecot.port) as log:
        async with logged_client(account, log) as client:
            asked = await ask(client, tool, arguments)
            round_one = log.take()
            result = await answer(client, tool, arguments, asked.request_state)
            round_two = log.take()
    assert structured(result)["status"] == "done" and structured(result)["count"] == 1
    assert names(round_one) == question
    assert names(round_two) == done
    # issue #27: an approved change's answer in at most 6 commands; a move's one more searches the destination
    assert len(round_two) <= ROUND_TWO_MOST + (change == "move")


def fetches(commands: list[Command]) -> list[Command]:
    return [command for command in commands if command.name in ("FETCH", "UID FETCH")]


async def test_reading_examines_and_fetches_every_body_with_peek(account: Account) -> None:
    before = account.imap()
    before.select_folder("INBOX", readonly=True)
    flags = before.get_flags(before.search(["ALL"]))
    before.logout()
    with CommandLog(account.dovecot.port) as log:
        async with logged_client(account, log) as client:
            page = structured(await client.call_tool("search_messages", {"limit": 100}))
            structured(await client.call_tool("search_messages", {"text": "report", "limit": 2, "offset": 1}))
            for summary in page["messages"]:
                message = structured(await client.call_tool("get_message", {"id": summary["id"]}))
                if message["attachments"]:
                    structured(await client.call_tool("get_attachments", {"id": summary["id"]}))
            structured(await client.call_tool("search_messages", {"mailbox": "Archive"}))
        sent = log.take()
    assert "SELECT" not in names(sent) and "EXAMINE" in names(sent)
    bodies = [command for command in fetches(sent) if "BODY.PEEK[" in command.arguments]
    assert bodies, "no body was fetched: the assertion below would hold for nothing"
    assert not [command.arguments for command in fetches(sent) if SETS_SEEN.search(command.arguments)]
    after = account.imap()
    after.select_folder("INBOX", readonly=True)
    assert after.get_flags(after.search(["ALL"])) == flags  # nothing read became \Seen
    after.logout()


def test_the_log_reads_no_command_inside_a_literal_and_keeps_no_secret(account: Account) -> None:
    """The instrument itself: a message that looks like commands, and a search string sent as a literal."""
    body = b"Subject: lookalike\r\n\r\nA1 SELECT INBOX\r\nB2 UID STORE 1 +FLAGS (\\Seen)\r\n"
    with CommandLog(account.dovecot.port) as log:
        client = IMAPClient("127.0.0.1", log.port, ssl=False, timeout=30)
        client.login(account.username, account.password)
        client.append("INBOX", body)
        client.select_folder("INBOX", readonly=True)
        assert client.search(["TEXT", "Grüße aus"], charset="UTF-8")  # non-ASCII: sent as a literal
        client.logout()
        sent = log.take()
    commands = [command for command in sent if command.name != "CAPABILITY"]  # imapclient asks when it likes
    assert names(commands) == ["LOGIN", "APPEND", "EXAMINE", "UID SEARCH", "LOGOUT"]
    assert all(re.search(r"\{\d+\+?\}$", commands[n].arguments) for n in (1, 3))  # each ended in a literal
    shown = " ".join(f"{command.tag} {command.name} {command.arguments}" for command in sent)
    assert "SELECT" not in names(sent) and "UID STORE" not in names(sent)
    assert account.password not in shown and account.username not in shown
    assert "lookalike" not in shown and "Grüße" not in shown and '"…"' in shown
