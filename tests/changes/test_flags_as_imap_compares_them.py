"""Flags as IMAP compares them (issue 39, break 3), on servers that answer the way others do, made by a line proxy.

- A server that keeps keywords in lower case (`$forwarded` for `$Forwarded`): the flag names are
  case-insensitive (RFC 9051 2.3.2), so the keyword was kept, and the tools say so.
- PERMANENTFLAGS read as RFC 9051 says: `\\*` lets new keywords be kept, a system flag is kept only when
  listed. `imap-mcp check`, get_server_info and set_message_flags read it with one function, so for every
  flag and every PERMANENTFLAGS the check's line says what the tool does.
"""

from __future__ import annotations

import dataclasses
import re
import socket
from collections.abc import Callable

import pytest
from harness import Account, Person, append_message, message_ids, plain_mail, served, structured
from line_proxy import LineProxy, Lines, Pump
from smtp_capture import CaptureSMTP

from imap_mcp.server.check import run_check
from imap_mcp.server.config import Settings, load_settings
from imap_mcp.server.imap.permanent_flags import holds, keeps, keeps_new_keywords

pytestmark = pytest.mark.anyio

_FLAG_LIST = re.compile(rb"(FLAGS \()([^()]*)(\))", re.IGNORECASE)
_PERMANENT = re.compile(rb"(\[PERMANENTFLAGS \()[^()]*(\)\])", re.IGNORECASE)


def lowercase_keywords(line: bytes) -> bytes:
    """A server line whose flag lists (FETCH FLAGS, FLAGS, PERMANENTFLAGS) name every keyword in lower case."""

    def lowered(found: re.Match[bytes]) -> bytes:
        flags = b" ".join(f if f.startswith(b"\\") else f.lower() for f in found.group(2).split())
        return found.group(1) + flags + found.group(3)

    return _FLAG_LIST.sub(lowered, line)


def says_permanent(flags: bytes) -> Callable[[bytes], bytes]:
    """A rewrite of server lines: every PERMANENTFLAGS says `flags`."""
    return lambda line: _PERMANENT.sub(lambda found: found.group(1) + flags + found.group(2), line)


def _unchanged(line: bytes) -> bytes:
    return line


class Rewriting(LineProxy):
    """A proxy whose server lines pass through `rewrite` (the client's as they are)."""

    name = "flag-rewriting"

    def __init__(self, upstream_port: int, rewrite: Callable[[bytes], bytes]) -> None:
        super().__init__(upstream_port)
        self.rewrite = rewrite

    def pumps(self, number: int, client: socket.socket, server: socket.socket) -> list[Pump]:
        return [Lines(client, server, _unchanged).pump, Lines(server, client, self.rewrite).pump]


def through(settings: Settings, proxy: LineProxy) -> Settings:
    return dataclasses.replace(settings, imap=dataclasses.replace(settings.imap, port=proxy.port, tls="none"))


def fresh_message(account: Account) -> str:
    uid = append_message(account, plain_mail("flags"))
    return next(i for i in message_ids(account, "INBOX") if i.endswith(f".{uid}"))


def flags_of(account: Account, message_id: str) -> set[bytes]:
    uid = int(message_id.rsplit(".", 1)[1])
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        return set(client.fetch([uid], ["FLAGS"])[uid][b"FLAGS"])
    finally:
        client.logout()


def test_permanent_flags_are_read_as_rfc_9051_says() -> None:
    assert keeps([b"\\*"], "$Label1") and not keeps([b"\\*"], "\\Flagged")
    assert keeps([b"\\flagged"], "\\Flagged") and keeps([b"$label1"], "$Label1") and not keeps([b"\\Seen"], "$x")
    assert keeps(None, "\\Seen") and keeps(None, "$x") and keeps_new_keywords(None)
    assert not keeps_new_keywords([b"\\Seen", b"$Label1"]) and keeps_new_keywords([b"\\*"])
    assert holds([b"$forwarded", b"\\Seen"], "$Forwarded") and not holds([b"$Forwarded"], "$Forward")


async def test_a_keyword_kept_in_lower_case_is_reported_kept(account: Account, smtp: CaptureSMTP) -> None:
    settings = load_settings(account.env(**smtp.env(), SMTP_FROM="demo@example.org"))
    forwarded_id, flagged_id = fresh_message(account), fresh_message(account)
    with Rewriting(account.server.port, lowercase_keywords) as proxy:
        async with served(through(settings, proxy), mode="2026-07-28", elicitation_callback=Person()) as client:
            forward = structured(
                await client.call_tool("forward_message", {"id": forwarded_id, "to": ["alice@example.com"]})
            )
            flags = structured(await client.call_tool("set_message_flags", {"ids": [flagged_id], "add": ["$Label1"]}))
    assert forward["status"] == "sent" and forward["forwarded"] is True, forward
    assert not any("$Forwarded" in problem for problem in forward["problems"])
    assert b"$Forwarded" in flags_of(account, forwarded_id)
    assert flags["added"] == ["$Label1"] and flags["not_kept"] == [], flags


#: PERMANENTFLAGS as servers answer them: keywords only (`\\*`), some system flags, none, one keyword by name
PERMANENT_FLAGS = [
    b"\\*",
    b"\\Seen \\*",
    b"\\Seen \\Flagged \\Answered \\Deleted \\Draft",
    b"",
    b"\\Flagged $Label1",
    b"\\seen \\FLAGGED \\answered \\*",
]
#: what set_message_flags is asked to add, one call each
FLAGS = ["\\Seen", "\\Flagged", "\\Answered", "$Label1", "$Label2"]


@pytest.mark.parametrize("permanent", PERMANENT_FLAGS, ids=lambda flags: flags.decode() or "none")
async def test_check_says_what_set_message_flags_does_for_every_flag(account: Account, permanent: bytes) -> None:
    with Rewriting(account.server.port, says_permanent(permanent)) as proxy:
        settings = through(account.settings(), proxy)
        lines = {step.name: step for step in run_check(settings)}
        async with served(settings) as client:
            info = structured(await client.call_tool("get_server_info", {}))
            refused = {
                flag
                for flag in FLAGS
                if (
                    await client.call_tool("set_message_flags", {"ids": [fresh_message(account)], "add": [flag]})
                ).is_error
            }
    flags_line, keywords_line = lines["set_message_flags (flags)"], lines["set_message_flags (keywords)"]
    said_refused = {flag for flag in FLAGS[:3] if flag in flags_line.detail and flags_line.outcome != "works"}
    if keywords_line.outcome == "refused":
        kept_by_name = {flag for flag in FLAGS[3:] if flag.lower().encode() in permanent.lower().split()}
        said_refused |= set(FLAGS[3:]) - kept_by_name
    assert refused == said_refused, (flags_line, keywords_line)
    assert (flags_line.outcome == "works") == (not refused & set(FLAGS[:3]))
    keywords = lines["IMAP keywords"].detail
    not_kept = re.search(r"; not (.*) \(PERMANENTFLAGS", keywords)
    assert set(not_kept.group(1).split(", ") if not_kept else ()) == refused & set(FLAGS[:3]), keywords
    told = {(u["tool"] + (f" ({u['use']})" if u["use"] else "")): u["verdict"] for u in info["imap"]["tools"]}
    assert told["set_message_flags (flags)"] == flags_line.outcome
    assert told["set_message_flags (keywords)"] == keywords_line.outcome
