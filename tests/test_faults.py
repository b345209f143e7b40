"""Faults between imap-mcp and its servers, injected at exact bytes by `fault_proxy.FaultProxy`.

imap-mcp talks plain TCP to the proxy (IMAP_TLS=none on loopback), the proxy to the real
Dovecot or aiosmtpd. After each run a census of Message-IDs over every mailbox checks that
nothing was lost and nothing duplicated.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Iterator

import anyio
import pytest
from fault_proxy import Fault, FaultProxy
from harness import Account, error_text, message_ids, structured
from mcp import Client

from imap_mcp.server.app import build_server
from imap_mcp.server.config import ImapSettings, Settings
from imap_mcp.server.imap.pool import ImapPool

pytestmark = pytest.mark.anyio

#: the overall per-operation deadline the tests run with (IMAP_TIMEOUT)
DEADLINE = 2.0
#: no test here should get anywhere near this; it only turns a hang into a failure
HANG_GUARD = 60


def proxied(account: Account, proxy: FaultProxy, timeout: float = DEADLINE) -> ImapSettings:
    """Settings that reach `account` through `proxy`, in plain text so the proxy sees every byte."""
    return dataclasses.replace(account.imap_settings("none"), port=proxy.port, timeout=timeout)


@contextlib.contextmanager
def through_proxy(account: Account) -> Iterator[FaultProxy]:
    with FaultProxy(account.dovecot.port) as proxy:
        yield proxy


def census(account: Account) -> Counter[str]:
    """How many messages carry each Message-ID, over every mailbox of the account."""
    client = account.imap()
    counts: Counter[str] = Counter()
    try:
        for _, _, name in client.list_folders():
            client.select_folder(name, readonly=True)
            uids = client.search(["ALL"])
            for data in client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]).values():
                header = next(v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS"))
                counts[header.decode().split(":", 1)[-1].strip()] += 1
    finally:
        client.logout()
    return counts


async def test_a_server_trickling_its_answer_is_stopped_at_the_overall_deadline(account: Account) -> None:
    """One byte every 0.2 s keeps each read under its timeout; the operation as a whole is bounded."""
    with through_proxy(account) as proxy:
        pool = ImapPool(proxied(account, proxy))
        proxy.inject(Fault(b"FETCH (UID", "trickle", interval=0.2))
        with anyio.fail_after(HANG_GUARD):
            async with Client(build_server(Settings(imap=pool.settings), pool=pool)) as c:
                text = error_text(await c.call_tool("search_messages", {}))
                after = structured(await c.call_tool("search_messages", {}))
        pool.close_all()
    assert "IMAP_TIMEOUT (2 s)" in text
    assert len(after["messages"]) == len(message_ids(account, "INBOX"))  # the next call runs on a fresh connection


async def test_a_server_stalling_in_its_greeting_is_stopped_at_the_overall_deadline(account: Account) -> None:
    with through_proxy(account) as proxy:
        pool = ImapPool(proxied(account, proxy))
        proxy.inject(Fault(b"* OK", "trickle", interval=0.2))
        with anyio.fail_after(HANG_GUARD):
            async with Client(build_server(Settings(imap=pool.settings), pool=pool)) as c:
                text = error_text(await c.call_tool("list_mailboxes", {}))
        pool.close_all()
    assert "IMAP_TIMEOUT" in text
