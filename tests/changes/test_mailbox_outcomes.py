"""manage_mailbox reads back what is true instead of guessing it from a lost answer (issue 39, break 2).

- A server that refuses CLOSE after EXAMINE (`NO [READ-ONLY]`) and offers no UNSELECT keeps the mailbox
  selected; imap-mcp then EXAMINEs another mailbox, so RENAME and DELETE never name the selected one (made
  here by a proxy: CLOSE reaches Dovecot as a NOOP and its answer reads NO; UNSELECT and CONDSTORE are taken
  out of the capabilities, so the mailbox is settled, selected and left, before its UIDVALIDITY is read).
- An answer to CREATE, RENAME or DELETE lost or spoiled after the server ran it (the line proxy cuts the
  connection there, or answers NO): the tool looks (LIST) and says it is done, with the answer's fate in
  `read_back`; the approved delete never says "lost … try again" for a mailbox it deleted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import socket
import threading
from collections.abc import AsyncIterator

import pytest
from command_log import CommandLog, Spoil
from harness import Account, Person, mailbox_names, served, structured
from line_proxy import LineProxy, Lines, Pump
from mcp import Client

from imap_mcp.server.config import Settings

pytestmark = pytest.mark.anyio

_COMMAND = re.compile(rb"^(\S+) ([A-Za-z]+)")
#: capabilities taken out: no UNSELECT, and no CONDSTORE (so each mailbox is settled: SELECT, EXAMINE, CLOSE)
_HIDDEN = re.compile(rb" (?:UNSELECT|CONDSTORE|QRESYNC)\b", re.IGNORECASE)


class CloseRefused(LineProxy):
    """Dovecot as a server that offers no UNSELECT and refuses CLOSE after EXAMINE: the mailbox stays selected.
    The commands' names are kept in `sent`, in order, with the mailbox a SELECT or EXAMINE named."""

    name = "close-refused"

    def __init__(self, upstream_port: int) -> None:
        super().__init__(upstream_port)
        self.sent: list[str] = []
        self._refused: set[bytes] = set()
        self._guard = threading.Lock()

    def __enter__(self) -> CloseRefused:
        super().__enter__()
        return self

    def _command(self, line: bytes) -> bytes:
        found = _COMMAND.match(line)
        if found is None:
            return line
        tag, name = found.group(1), found.group(2).upper().decode()
        with self._guard:
            self.sent.append(line.decode("utf-8", "replace").split(" ", 1)[1].strip())
            if name == "CLOSE":
                self._refused.add(tag)
                return tag + b" NOOP\r\n"
        return line

    def _answer(self, line: bytes) -> bytes:
        tag = line.split(b" ", 1)[0]
        with self._guard:
            refused = tag in self._refused
            self._refused.discard(tag)
        if refused:
            return tag + b" NO [READ-ONLY] Mailbox state cannot be written\r\n"
        if b"CAPABILITY" in line.upper():
            return _HIDDEN.sub(b"", line)
        return line

    def pumps(self, number: int, client: socket.socket, server: socket.socket) -> list[Pump]:
        return [Lines(client, server, self._command).pump, Lines(server, client, self._answer).pump]


def through(account: Account, port: int) -> Settings:
    return dataclasses.replace(account.settings(), imap=dataclasses.replace(account.imap_settings("none"), port=port))


def made(account: Account, name: str) -> str:
    """A new mailbox `name` holding one message, made by another client (Dovecot re-creates its own Archive)."""
    direct = account.imap()
    try:
        direct.create_folder(account.mailbox(name))
        direct.append(account.mailbox(name), b"Subject: kept\r\n\r\nhello\r\n")
    finally:
        direct.logout()
    return name


async def rename(client: Client, account: Account, old: str, new: str) -> dict[str, object]:
    arguments = {"action": "rename", "mailbox": account.mailbox(old), "new_name": account.mailbox(new)}
    token = structured(await client.call_tool("manage_mailbox", arguments))["confirm_token"]
    return structured(await client.call_tool("manage_mailbox", {**arguments, "confirm_token": token}))


async def test_where_close_is_refused_a_rename_and_a_delete_never_name_the_selected_mailbox(
    account: Account,
) -> None:
    with CloseRefused(account.server.port) as proxy:
        async with served(through(account, proxy.port), elicitation_callback=Person()) as client:
            renamed = await rename(client, account, made(account, "PT"), "PT2")
            deleted = structured(
                await client.call_tool("manage_mailbox", {"action": "delete", "mailbox": account.mailbox("PT2")})
            )
    assert renamed["status"] == deleted["status"] == "done"
    assert renamed["read_back"] is None and deleted["read_back"] is None
    names = mailbox_names(account)
    assert account.mailbox("PT") not in names and account.mailbox("PT2") not in names
    assert "CLOSE" in proxy.sent, proxy.sent  # the server's refusal was met
    for command in ("RENAME", "DELETE"):
        at = next(n for n, sent in enumerate(proxy.sent) if sent.startswith(command))
        opened = [sent for sent in proxy.sent[:at] if sent.startswith(("SELECT", "EXAMINE"))]
        assert opened[-1] in ('EXAMINE "INBOX"', "EXAMINE INBOX"), " | ".join(proxy.sent[: at + 1])


@contextlib.asynccontextmanager
async def spoiling(account: Account) -> AsyncIterator[tuple[Client, CommandLog]]:
    with CommandLog(account.server.port) as log:
        async with served(through(account, log.port), elicitation_callback=Person()) as client:
            yield client, log


@pytest.mark.parametrize("how", ["cut", "NO"])
async def test_a_rename_whose_answer_was_lost_is_read_back_as_done(account: Account, how: Spoil) -> None:
    async with spoiling(account) as (client, log):
        log.spoil(0, how, "RENAME")
        renamed = await rename(client, account, made(account, "PT"), "PT2")
    assert [command.name for command in log.spoiled] == ["RENAME"]
    assert renamed["status"] == "done" and "the mailbox list, read again, shows the change was made" in str(
        renamed["read_back"]
    )
    assert account.mailbox("PT2") in mailbox_names(account)


@pytest.mark.parametrize("how", ["cut", "NO"])
async def test_an_approved_delete_whose_answer_was_lost_is_done_not_try_again(account: Account, how: Spoil) -> None:
    async with spoiling(account) as (client, log):
        log.spoil(0, how, "DELETE")
        arguments = {"action": "delete", "mailbox": account.mailbox(made(account, "PT"))}
        result = await client.call_tool("manage_mailbox", arguments)
    deleted = structured(result)
    assert deleted["status"] == "done" and deleted["approved_by"] == "dialog"
    assert "try again" not in result.content[0].text.lower()  # type: ignore[union-attr]
    assert "the mailbox list, read again, shows the change was made" in str(deleted["read_back"])
    assert account.mailbox("PT") not in mailbox_names(account)


async def test_a_create_whose_answer_was_spoiled_is_read_back_as_done(account: Account) -> None:
    async with spoiling(account) as (client, log):
        log.spoil(0, "BAD", "CREATE")
        created = structured(
            await client.call_tool("manage_mailbox", {"action": "create", "mailbox": account.mailbox("Made")})
        )
    assert created["status"] == "done" and created["read_back"]
    assert account.mailbox("Made") in mailbox_names(account)
