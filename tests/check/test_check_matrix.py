"""`imap-mcp check` tells the truth per tool on every server of the matrix.

On each server, the check's verdict for every use of every tool is compared with what the tools do
there: each use is called once through MCP (the cheapest call that reaches what it needs), and the
uses the check says are refused must be exactly those the tools refuse. What degrades cannot be seen
in a result (a slower search, a move in two steps), so the expected verdicts are written out per
server from what the behaviour tests establish there (tests/changes, tests/reading: Mailutils refuses
moves, deletes, keywords and list_new_messages; Courier moves by COPY + UID EXPUNGE; only Dovecot and
Cyrus have CONDSTORE). get_server_info judges the same way, so it gives the same verdicts.

`--write-test` proves it in scratch mailboxes: the same verdicts, and nothing else touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from check_output import run_check
from harness import Account, Person, append_message, message_ids, run_cli, structured
from imapclient import IMAPClient
from mcp import Client
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.check.write_test import STEPS as WRITE_STEPS
from imap_mcp.server.config import load_settings
from imap_mcp.server.serving.app import build_server
from imap_mcp.server.tools.needs import ServerFacts
from imap_mcp.server.tools.registry import TOOLS

pytestmark = [
    pytest.mark.matrix,
    pytest.mark.slow,
]

#: every tool use, as the check names it
USES = [r.name for spec in TOOLS for r in spec.readiness(ServerFacts(frozenset(), frozenset(), None))]
#: the tools offered only with SMTP_HOST
NEEDS_SMTP = {spec.name for spec in TOOLS if spec.needs == "SMTP_HOST"}
#: where a server's verdicts differ from "works", as the behaviour tests find it there
NOT_WORKS: dict[str, dict[str, str]] = {
    "dovecot": {},
    "cyrus": {},
    "courier": {  # no MOVE, SPECIAL-USE, ESEARCH, CONDSTORE, QRESYNC
        "list_mailboxes": "degrades",
        "search_messages": "degrades",
        "list_new_messages": "degrades",
        "delete_messages (permanent: false)": "degrades",
        "move_messages (mode: move)": "degrades",
    },
    "mailutils": {  # none of them, nor SORT or UIDPLUS, and no keywords
        "forward_message (save_to_sent: true)": "degrades",
        "forward_message (save_to_sent: false)": "degrades",
        "send_draft (save_to_sent: true)": "degrades",
        "send_draft (save_to_sent: false)": "degrades",
        "update_draft": "degrades",
        "list_mailboxes": "degrades",
        "search_messages": "degrades",
        "list_new_messages": "refused",
        "set_message_flags (keywords)": "refused",
        "delete_messages (permanent: false)": "refused",
        "delete_messages (permanent: true)": "refused",
        "move_messages (mode: move)": "refused",
        "move_messages (mode: copy)": "degrades",
    },
}
#: the write test's steps that imap-mcp refuses on a server (not sent), as the refusals above say
NOT_SENT = {"mailutils": {"IMAP last look", "IMAP MOVE", "IMAP UID EXPUNGE"}}
WEBHOOK_URL = "https://hooks.example.net/new-mail"


def expected(server: str) -> dict[str, str]:
    return {use: NOT_WORKS[server].get(use, "works") for use in USES}


@pytest.fixture
def full_env(account: Account, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The account with sending (a capturing SMTP server) and a store holding a saved webhook: every tool offered."""
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        env = account.env(
            **smtp.env(),
            SMTP_FROM=SENDER,
            IMAP_MCP_STORE=f"sqlite:///{tmp_path / 'store.sqlite3'}",
            IMAP_MCP_STORE_KEYS="k" * 43,
        )
        saved = run_cli(env, "webhook", "set", "--url", WEBHOOK_URL)
        assert saved.returncode == 0, saved.stderr
        yield env


Probe = tuple[str, Callable[[dict[str, list[str]]], dict[str, Any]]]


def probes(account: Account) -> dict[str, Probe]:
    """For each tool use: the tool, and its arguments from the sample's ids (by subject) — cheap, and each on a
    message of its own where it changes one."""
    return {
        "list_mailboxes": ("list_mailboxes", lambda ids: {}),
        "manage_mailbox": ("manage_mailbox", lambda ids: {"action": "create", "mailbox": account.mailbox("Probe")}),
        "search_messages": ("search_messages", lambda ids: {"subject": "report"}),
        "get_message": ("get_message", lambda ids: {"id": ids["Quarterly report"][0]}),
        "get_thread": ("get_thread", lambda ids: {"id": ids["Project kickoff"][0]}),
        "get_attachments": ("get_attachments", lambda ids: {"id": ids["Invoice and overview"][0]}),
        "list_new_messages": ("list_new_messages", lambda ids: {}),
        "set_message_flags (flags)": (
            "set_message_flags",
            lambda ids: {"ids": ids["Quarterly report"], "add": ["\\Flagged"]},
        ),
        "set_message_flags (keywords)": (
            "set_message_flags",
            lambda ids: {"ids": ids["Quarterly report"], "add": ["Work"]},
        ),
        "save_draft": ("save_draft", lambda ids: {"to": ["zoe@example.com"], "subject": "Draft", "body": "Hi\n"}),
        "update_draft": (
            "update_draft",
            lambda ids: {"id": new_draft(account), "to": ["zoe@example.com"], "subject": "Edited", "body": "Hi\n"},
        ),
        "send_message (save_to_sent: true)": (
            "send_message",
            lambda ids: {"to": ["zoe@example.com"], "subject": "Kept", "body": "Hi\n"},
        ),
        "send_message (save_to_sent: false)": (
            "send_message",
            lambda ids: {"to": ["zoe@example.com"], "subject": "Not kept", "body": "Hi\n", "save_to_sent": False},
        ),
        "reply_to_message (save_to_sent: true)": (
            "reply_to_message",
            lambda ids: {"id": ids["Project kickoff"][0], "body": "Yes\n"},
        ),
        "reply_to_message (save_to_sent: false)": (
            "reply_to_message",
            lambda ids: {"id": ids["Team lunch on Friday?"][0], "body": "Yes\n", "save_to_sent": False},
        ),
        "send_draft (save_to_sent: true)": ("send_draft", lambda ids: {"id": new_draft(account)}),
        "forward_message (save_to_sent: true)": (
            "forward_message",
            lambda ids: {"id": ids["Quarterly report"][0], "to": ["zoe@example.com"]},
        ),
        "forward_message (save_to_sent: false)": (
            "forward_message",
            lambda ids: {"id": ids["Quarterly report"][0], "to": ["zoe@example.com"], "save_to_sent": False},
        ),
        "send_draft (save_to_sent: false)": (
            "send_draft",
            lambda ids: {"id": new_draft(account), "save_to_sent": False},
        ),
        "delete_messages (permanent: false)": ("delete_messages", lambda ids: {"ids": ids["Your weekly deals"]}),
        "delete_messages (permanent: true)": (
            "delete_messages",
            lambda ids: {"ids": ids["Urgent: account notice"], "permanent": True},
        ),
        "move_messages (mode: move)": (
            "move_messages",
            lambda ids: {"ids": ids["Photos from the trip"], "destination": account.mailbox("Archive")},
        ),
        "move_messages (mode: copy)": (
            "move_messages",
            lambda ids: {"ids": ids["Grüße aus München"], "destination": account.mailbox("Archive"), "mode": "copy"},
        ),
        "get_server_info": ("get_server_info", lambda ids: {}),
        "get_webhook_status": ("get_webhook_status", lambda ids: {}),
        "set_webhook_enabled": ("set_webhook_enabled", lambda ids: {"enabled": False}),
        "set_webhook_outbox_limits": ("set_webhook_outbox_limits", lambda ids: {"reset": True}),
    }


def new_draft(account: Account) -> str:
    """The id of a new draft to send, of this account's own address."""
    uid = append_message(
        account,
        b"From: demo@example.org\r\nTo: zoe@example.com\r\nSubject: Draft to send\r\n\r\nHi\r\n",
        "Drafts",
        (b"\\Draft",),
    )
    return next(i for i in message_ids(account, "Drafts") if i.endswith(f".{uid}"))


def inbox_ids_by_subject(account: Account) -> dict[str, list[str]]:
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        fetched = client.fetch(client.search(["ALL"]), ["BODY.PEEK[HEADER.FIELDS (SUBJECT)]"])
    finally:
        client.logout()
    ids = dict(zip(sorted(fetched), message_ids(account, "INBOX"), strict=True))
    by_subject: dict[str, list[str]] = {}
    for uid, data in fetched.items():
        header = next(v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS"))
        subject = header.decode().split(":", 1)[1].strip()
        by_subject.setdefault(_decoded(subject), []).append(ids[uid])
    return by_subject


def _decoded(subject: str) -> str:
    from email.header import decode_header, make_header

    return str(make_header(decode_header(subject)))


@pytest.mark.anyio
async def test_check_says_per_tool_what_the_tools_do_on_this_server(account: Account, full_env: dict[str, str]) -> None:
    output = run_check(full_env)
    assert output.code == 0, output.text
    assert output.verdicts == expected(account.server_name), output.text

    ids = inbox_ids_by_subject(account)
    refused: dict[str, str] = {}
    async with Client(build_server(load_settings(full_env)), mode="legacy", elicitation_callback=Person()) as client:
        info = structured(await client.call_tool("get_server_info", {}))
        for use, (tool, arguments) in probes(account).items():
            result = await client.call_tool(tool, arguments(ids))
            if result.is_error:
                refused[use] = str(result.content[0].text)  # type: ignore[union-attr]
    assert set(probes(account)) == set(USES)  # every tool use is probed
    said_refused = {use for use, verdict in output.verdicts.items() if verdict == "refused"}
    assert set(refused) == said_refused, refused
    # get_server_info judges by the same table, so it gives the same verdicts
    told = {(u["tool"] + (f" ({u['use']})" if u["use"] else "")): u["verdict"] for u in info["imap"]["tools"]}
    assert told == output.verdicts


def mail_snapshot(account: Account) -> dict[str, list[tuple[str, tuple[bytes, ...]]]]:
    """Every mailbox with the Message-ID and flags of each of its messages (\\Recent aside): what another mail
    client would see of the account."""
    client: IMAPClient = account.imap()
    try:
        seen: dict[str, list[tuple[str, tuple[bytes, ...]]]] = {}
        for flags, _, name in client.list_folders():
            if b"\\Noselect" in flags or b"\\NonExistent" in flags:
                seen[name] = []
                continue
            client.select_folder(name, readonly=True)
            fetched = client.fetch(client.search(["ALL"]), ["FLAGS", "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
            seen[name] = sorted(
                (
                    next(v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS")).decode().strip(),
                    tuple(sorted(f for f in data[b"FLAGS"] if f != b"\\Recent")),
                )
                for data in fetched.values()
            )
        return seen
    finally:
        client.logout()


def test_the_write_test_proves_the_same_verdicts_and_touches_nothing_else(account: Account) -> None:
    before = mail_snapshot(account)
    announced = run_check(account.env())
    proven = run_check(account.env(), "--write-test")
    assert mail_snapshot(account) == before
    assert proven.code == 0, proven.text
    without_smtp = {
        use: "off" if use.split(" ")[0] in NEEDS_SMTP else verdict
        for use, verdict in expected(account.server_name).items()
    }
    assert proven.verdicts == announced.verdicts == without_smtp
    written = [line for line in proven.steps if line.name not in announced.step_names]
    assert [line.name for line in written] == list(WRITE_STEPS)
    not_sent = NOT_SENT.get(account.server_name, set())
    assert {line.name for line in written if line.outcome == "skip"} == not_sent, proven.text
    assert all(line.outcome == "ok" for line in written if line.name not in not_sent), proven.text
    assert all(
        "not sent: imap-mcp refuses it on this server" in line.detail for line in written if line.outcome == "skip"
    )
    proven_uses = {line.name for line in proven.tools if "proven:" in line.detail}
    assert {
        "save_draft",
        "list_new_messages",
        "set_message_flags (flags)",
        "set_message_flags (keywords)",
        "move_messages (mode: copy)",
        "move_messages (mode: move)",
        "delete_messages (permanent: false)",
        "delete_messages (permanent: true)",
    } <= proven_uses


@pytest.mark.anyio
@pytest.mark.servers("courier", "mailutils", reason="neither makes a mailbox of a role by itself (Dovecot does)")
async def test_a_missing_drafts_mailbox_is_named_with_what_to_create_and_save_draft_is_refused(
    account: Account,
) -> None:
    drafts = account.mailbox("Drafts")
    client = account.imap()
    try:
        client.delete_folder(drafts)
    finally:
        client.logout()
    output = run_check(account.env())
    mailboxes = output.step("IMAP mailboxes")
    assert mailboxes.outcome == "warn" and f"No Drafts mailbox: Create one named {drafts!r}" in mailboxes.detail
    assert output.verdicts["save_draft"] == "refused"
    assert {use for use, verdict in output.verdicts.items() if verdict == "refused"} == {
        use for use, verdict in expected(account.server_name).items() if verdict == "refused"
    } | {"save_draft", "update_draft"}
    async with Client(build_server(load_settings(account.env()))) as mcp:
        result = await mcp.call_tool("save_draft", {"to": ["zoe@example.com"], "subject": "Draft", "body": "Hi\n"})
    assert result.is_error and "no Drafts mailbox" in str(result.content[0].text)  # type: ignore[union-attr]
