"""Every server answer becomes a clear result, also one imap-mcp does not expect.

A real Dovecot answers; `fault_proxy`'s `replace` rewrites one piece of an answer on its way, as
servers outside the matrix answer: a number given as NIL (`HIGHESTMODSEQ NIL` for an empty
mailbox), an item left out, a NO or BAD with control characters in its text. Each either degrades
(a NIL HIGHESTMODSEQ: that mailbox is read as on a server without CONDSTORE) or becomes a tool
error naming the command and showing the server's answer, never the SDK's bare crash text. And
housekeeping a server does not need is not sent: no CLOSE before an APPEND where the server takes
it with a mailbox examined, and a NO to CLOSE after EXAMINE fails nothing.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from fault_proxy import Fault, FaultProxy
from harness import Account, error_text, plain_mail, pool_without, served, structured

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.errors import MailboxError
from imap_mcp.server.imap.pool import ImapPool

pytestmark = pytest.mark.anyio

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def proxied(account: Account, proxy: FaultProxy) -> ImapSettings:
    """Settings that reach `account` through `proxy`, in plain text so the proxy sees every byte."""
    return dataclasses.replace(account.imap_settings("none"), port=proxy.port)


def highest_modseq(account: Account) -> int:
    client = account.imap()
    try:
        return int(client.folder_status("INBOX", [b"HIGHESTMODSEQ"])[b"HIGHESTMODSEQ"])
    finally:
        client.logout()


@pytest.mark.parametrize("where", ["STATUS", "EXAMINE"])
async def test_a_nil_highestmodseq_reads_the_mailbox_as_without_condstore(account: Account, where: str) -> None:
    modseq = highest_modseq(account)
    given, said = {
        "STATUS": (f"HIGHESTMODSEQ {modseq})", "HIGHESTMODSEQ NIL)"),
        "EXAMINE": (f"[HIGHESTMODSEQ {modseq}]", "[HIGHESTMODSEQ NIL]"),
    }[where]
    with FaultProxy(account.server.port) as proxy:
        nil = proxy.inject(Fault(given.encode(), "replace", replacement=said.encode()))
        async with served(dataclasses.replace(account.settings(), imap=proxied(account, proxy))) as client:
            page = structured(await client.call_tool("search_messages", {}))
            again = structured(await client.call_tool("search_messages", {}))
    assert nil.fired
    assert page["total"] == again["total"] == 9 and page["messages"] == again["messages"]


async def test_an_examine_without_uidvalidity_is_an_error_naming_examine(account: Account) -> None:
    with FaultProxy(account.server.port) as proxy:
        proxy.inject(Fault(b"OK [UIDVALIDITY ", "replace", replacement=b"OK [X-NO-VALIDITY "))
        async with served(dataclasses.replace(account.settings(), imap=proxied(account, proxy))) as client:
            text = error_text(await client.call_tool("search_messages", {}))
    assert "answered EXAMINE with something imap-mcp cannot use (no UIDVALIDITY among" in text


@pytest.mark.parametrize("kind", ["NO", "BAD"])
async def test_a_refusal_names_the_command_and_shows_its_answer_printable(account: Account, kind: str) -> None:
    with FaultProxy(account.server.port) as proxy:
        refusal = f"{kind} Status \x1b[2J\x07refused\x00 here".encode()
        # the STATUS right after the EXAMINE, as Dovecot answers it
        status = b"OK [CLIENTBUG] Status on selected mailbox completed"
        proxy.inject(Fault(status, "replace", replacement=refusal))
        async with served(dataclasses.replace(account.settings(), imap=proxied(account, proxy))) as client:
            text = error_text(await client.call_tool("search_messages", {}))
    assert "STATUS answered" in text and "Status [2J refused here" in text
    assert not CONTROL.search(text)


async def test_an_answer_the_reading_code_cannot_use_names_the_command_and_the_last_line(account: Account) -> None:
    """Whatever code reading an answer raises (here a KeyError, as for a FETCH item left out) leaves the pool as
    a `MailboxError` naming the command, and the connection stays usable."""
    pool = ImapPool(account.imap_settings(), max_size=1)

    def reads_a_missing_item(client: object) -> None:
        client.noop()  # type: ignore[attr-defined]
        items: dict[bytes, object] = {}
        _ = items[b"ENVELOPE"]

    try:
        with pytest.raises(MailboxError) as refused:
            pool.run_sync(reads_a_missing_item)
        assert pool.run_sync(lambda c: c.noop()) is not None
    finally:
        pool.close_all()
    text = str(refused.value)
    assert "answered NOOP in a way imap-mcp cannot use" in text and "KeyError" in text and "OK" in text
    assert pool.opened == 1


async def test_a_write_after_a_read_sends_no_close_where_the_server_needs_none(account: Account) -> None:
    """Dovecot takes an APPEND with a mailbox examined: nothing is closed first (a NO to that CLOSE, as one
    server answers it, failed every write after a read on the same connection)."""
    with FaultProxy(account.server.port) as proxy:
        close = proxy.inject(Fault(b"OK Close completed", "replace", replacement=b"NO Close failed"))
        pool = ImapPool(proxied(account, proxy), max_size=1)
        async with served(account, pool=pool) as client:
            structured(await client.call_tool("search_messages", {}))
            draft = structured(
                await client.call_tool("save_draft", {"to": ["bob@example.net"], "subject": "s", "body": "b"})
            )
        pool.close_all()
    assert draft["mailbox"] == "Drafts" and pool.opened == 1
    assert not close.fired


async def test_a_refused_close_after_examine_fails_nothing(account: Account) -> None:
    """On a server without CONDSTORE or UNSELECT, each mailbox is settled at first (SELECT, EXAMINE, CLOSE):
    a NO to that CLOSE is logged and the read goes on."""
    with FaultProxy(account.server.port) as proxy:
        close = proxy.inject(Fault(b"OK Close completed", "replace", replacement=b"NO Close failed"))
        pool = pool_without(account, ("CONDSTORE", "UNSELECT"), settings=proxied(account, proxy))
        async with served(account, pool=pool) as client:
            page = structured(await client.call_tool("search_messages", {}))
        pool.close_all()
    assert close.fired and page["total"] == 9


async def test_an_append_refused_while_a_mailbox_is_examined_is_asked_again_with_none(account: Account) -> None:
    """A server that refuses an APPEND while a mailbox is selected (Courier) gets it again with none selected,
    and on that connection every later APPEND leaves the mailbox first: learnt from the refusal."""
    from imap_mcp.server.imap.connection import append, connect

    with FaultProxy(account.server.port) as proxy:
        refused = proxy.inject(Fault(b"OK [APPENDUID", "replace", replacement=b"NO [X-REFUSED"))
        client = connect(proxied(account, proxy))
        try:
            client.select_folder("INBOX", readonly=True)
            first = append(client, "Archive", plain_mail("first"), ())
            client.select_folder("INBOX", readonly=True)
            second = append(client, "Archive", plain_mail("second"), ())
            selected = client._imap.state
        finally:
            client.logout()
    assert refused.fired and b"APPENDUID" in first and b"APPENDUID" in second
    assert selected == "AUTH"
