"""`check --write-test` proves what the tools will do (issue 39, break 4), on servers a line proxy makes of Dovecot.

- A server that announces MOVE and answers it `NO MOVE extension not supported`: the uses that move fail, and
  the verdict is "degraded", never "ready".
- A server whose Trash always opens read-only: trash-delete fails (the scratch mailboxes could not show it;
  the real Trash is opened read-write, and nothing is written to it).
- A server that will not delete the scratch mailboxes: the clean-up reads the list again and names each one
  left, with how to remove it.

The proxy answers a refused command itself: the command reaches Dovecot as a NOOP, and its completion reads NO.
"""

from __future__ import annotations

import dataclasses
import re
import socket
import threading

from check_output import run_check as run_check_command
from harness import Account, mailbox_names
from line_proxy import LineProxy, Lines, Pump

from imap_mcp.server.check import Step, degraded, ready, run_check
from imap_mcp.server.config import Settings

_COMMAND = re.compile(rb"^(\S+) (UID [A-Za-z]+|[A-Za-z]+) ?(.*)\r\n$")


class Refusing(LineProxy):
    """Dovecot refusing the commands named in `refused` (command name → the words of its NO), and answering every
    SELECT of `read_only` as READ-ONLY."""

    name = "refusing"

    def __init__(self, upstream_port: int, refused: dict[str, bytes], read_only: str | None = None) -> None:
        super().__init__(upstream_port)
        self.refused, self.read_only = refused, read_only
        self._answers: dict[bytes, bytes] = {}
        self._guard = threading.Lock()

    def __enter__(self) -> Refusing:
        super().__enter__()
        return self

    def _command(self, line: bytes) -> bytes:
        found = _COMMAND.match(line)
        if found is None:
            return line
        tag, name, rest = found.group(1), found.group(2).upper().decode(), found.group(3)
        with self._guard:
            if name in self.refused:
                self._answers[tag] = b"NO " + self.refused[name]
                return tag + b" NOOP\r\n"
            if name == "SELECT" and self.read_only and rest.strip(b'"') == self.read_only.encode():
                self._answers[tag] = b"OK [READ-ONLY] Select completed"
        return line

    def _answer(self, line: bytes) -> bytes:
        tag = line.split(b" ", 1)[0]
        with self._guard:
            answer = self._answers.pop(tag, None)
        return line if answer is None or tag == b"*" else tag + b" " + answer + b"\r\n"

    def pumps(self, number: int, client: socket.socket, server: socket.socket) -> list[Pump]:
        return [Lines(client, server, self._command).pump, Lines(server, client, self._answer).pump]


def through(account: Account, proxy: LineProxy) -> Settings:
    return dataclasses.replace(
        account.settings(), imap=dataclasses.replace(account.imap_settings("none"), port=proxy.port)
    )


def by_name(steps: list[Step]) -> dict[str, Step]:
    return {step.name: step for step in steps}


def test_on_dovecot_the_role_mailboxes_open_read_write_and_the_clean_up_is_verified(account: Account) -> None:
    before = mailbox_names(account)
    with Refusing(account.server.port, {}) as proxy:
        steps = run_check(through(account, proxy), write_test_too=True)
    lines = by_name(steps)
    assert lines["IMAP roles opened"].outcome == "ok", lines["IMAP roles opened"]
    assert "Trash 'Trash'" in lines["IMAP roles opened"].detail
    assert lines["IMAP clean-up"].outcome == "ok" and "(listed no more)" in lines["IMAP clean-up"].detail
    assert ready(steps) and degraded(steps) == []
    assert mailbox_names(account) == before


def test_move_announced_and_refused_is_degraded_never_ready(account: Account) -> None:
    with Refusing(account.server.port, {"UID MOVE": b"MOVE extension not supported"}) as proxy:
        lines = by_name(run_check(through(account, proxy), write_test_too=True))
        env = account.env("none", IMAP_PORT=str(proxy.port))
        output = run_check_command(env, "--write-test")
    assert lines["IMAP MOVE"].outcome == "warn" and "MOVE extension not supported" in lines["IMAP MOVE"].detail
    assert lines["move_messages (mode: move)"].outcome == "fails"
    assert output.verdicts["move_messages (mode: move)"] == "fails"
    assert output.last.startswith("imap-mcp check: degraded — ") and "move_messages (mode: move)" in output.last
    assert output.code == 0


def test_a_trash_that_opens_read_only_fails_trash_delete(account: Account) -> None:
    with Refusing(account.server.port, {}, read_only=account.mailbox("Trash")) as proxy:
        steps = run_check(through(account, proxy), write_test_too=True)
    lines = by_name(steps)
    assert lines["IMAP roles opened"].outcome == "warn" and "opens read-only" in lines["IMAP roles opened"].detail
    trash_delete = lines["delete_messages (permanent: false)"]
    assert trash_delete.outcome == "fails" and "opens read-only" in trash_delete.detail, trash_delete
    assert "delete_messages (permanent: false)" in degraded(steps)


def test_a_scratch_mailbox_the_server_keeps_is_named_with_how_to_remove_it(account: Account) -> None:
    with Refusing(account.server.port, {"DELETE": b"[CANNOT] Mailbox is busy"}) as proxy:
        lines = by_name(run_check(through(account, proxy), write_test_too=True))
    clean_up = lines["IMAP clean-up"]
    left = sorted(name for name in mailbox_names(account) if "imap-mcp-check-" in name)
    assert clean_up.outcome == "warn" and len(left) == 2, clean_up
    assert all(repr(name) in clean_up.detail for name in left) and "manage_mailbox (action delete)" in clean_up.detail
