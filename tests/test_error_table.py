"""Errors are mapped in one place: every domain error reaches every tool's caller as our own text, never the SDK's.

The translation lives where tools are registered (`tools.registry`); feature code raises domain errors and never
builds a tool error. Here every `ImapMcpError` class is raised where each tool meets the outside world (the
IMAP pool; the webhook store for the webhook tools) and each tool's result is read; and anything else a tool
raises becomes one named internal error, its traceback in the log. No IMAP server is needed: nothing gets past
the patched call.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import Any

import pytest
from harness import error_text, served

from imap_mcp.protocol.errors import ApprovalRefused, ImapMcpError
from imap_mcp.server.config import ImapSettings, Settings, SmtpSettings
from imap_mcp.server.imap.message_ids import MessageRef, encode_id
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.setting_values import Secret
from imap_mcp.server.tools import webhooks as webhook_tools
from imap_mcp.server.tools.registry import BY_NAME, TOOLS, internal_error

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
ID = encode_id(MessageRef("INBOX", 7, 42))
#: a call of each tool that gets as far as the outside world
CALLS: dict[str, dict[str, Any]] = {
    "list_mailboxes": {},
    "manage_mailbox": {"action": "create", "mailbox": "Plans"},
    "search_messages": {},
    "get_message": {"id": ID},
    "get_attachments": {"id": ID},
    "get_thread": {"id": ID},
    "list_new_messages": {},
    "set_message_flags": {"ids": [ID], "add": ["\\Seen"]},
    "delete_messages": {"ids": [ID]},
    "move_messages": {"ids": [ID], "destination": "Archive"},
    "save_draft": {"to": ["alice@example.org"], "subject": "Plans", "body": "Draft.\n"},
    "send_message": {"to": ["alice@example.org"], "subject": "Plans", "body": "Hello.\n"},
    "reply_to_message": {"id": ID, "body": "Thanks.\n"},
    "send_draft": {"id": encode_id(MessageRef("Drafts", 7, 42))},
    "update_draft": {"id": encode_id(MessageRef("Drafts", 7, 42)), "body": "Draft.\n"},
    "forward_message": {"id": ID, "to": ["alice@example.org"]},
    "get_webhook_status": {},
    "set_webhook_enabled": {"enabled": False},
    "set_webhook_outbox_limits": {"max_events": 10},
}
#: get_server_info answers a failing IMAP server in its result (imap.problem), not as an error
ANSWERS_WITH_A_PROBLEM = {"get_server_info"}
#: where a tool says more precisely what the error means (an id's mailbox that cannot be opened is gone)
REPHRASED = {
    ("NoSuchMailbox", "get_message"): "no longer exists",
    ("NoSuchMailbox", "get_attachments"): "no longer exists",
    ("NoSuchMailbox", "get_thread"): "no longer exists",
}


def subclasses(root: type[BaseException]) -> set[type[BaseException]]:
    found = {root}
    for child in root.__subclasses__():
        found |= subclasses(child)
    return found


def domain_errors() -> list[type[ImapMcpError]]:
    import imap_mcp.server.serving.app  # noqa: F401  (every module that defines one is imported with the server)

    return sorted(subclasses(ImapMcpError), key=lambda kind: f"{kind.__module__}.{kind.__qualname__}")  # type: ignore[arg-type]


def instance(kind: type[ImapMcpError]) -> ImapMcpError:
    """One of `kind` with a message of its own, whatever its constructor takes."""
    message = f"{kind.__name__} said what to do"
    try:
        return kind(message)
    except (TypeError, AttributeError):  # a constructor that takes something else (a status, a check step)
        error = kind.__new__(kind)
        Exception.__init__(error, message)
        return error


def settings() -> Settings:
    imap = ImapSettings(host="imap.example", port=993, username="u@example.org", password=Secret("pw"))
    smtp = SmtpSettings(
        host="smtp.example", port=465, username="u@example.org", password=Secret("pw"), sender="u@example.org"
    )
    return Settings(imap=imap, smtp=smtp)


def failing(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """Every way out of the tools raises `error`: the IMAP pool and the webhook store."""

    def raising(*args: object, **kwargs: object) -> Any:
        raise error

    async def raising_async(*args: object, **kwargs: object) -> Any:
        raise error

    monkeypatch.setattr(ImapPool, "run", raising_async)
    monkeypatch.setattr(ImapPool, "run_sync", raising)
    monkeypatch.setattr(webhook_tools, "webhook_store", raising)


def test_no_module_but_the_registry_builds_a_tool_error() -> None:
    builders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for folder in ("server", "protocol", "sealing")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != ROOT / "server" / "tools" / "registry.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ToolError"
    ]
    assert builders == []


@pytest.mark.parametrize("kind", domain_errors(), ids=lambda kind: kind.__name__)
async def test_every_domain_error_reaches_every_tool_as_our_text(
    kind: type[ImapMcpError], monkeypatch: pytest.MonkeyPatch
) -> None:
    error = instance(kind)
    failing(monkeypatch, error)
    async with served(settings(), mode="2026-07-28") as client:
        offered = {tool.name for tool in (await client.list_tools()).tools}
        assert offered == set(CALLS) | ANSWERS_WITH_A_PROBLEM
        for name, arguments in CALLS.items():
            text = error_text(await client.call_tool(name, arguments))
            prefix = "" if isinstance(error, ApprovalRefused) else BY_NAME[name].refused_prefix
            expected = REPHRASED.get((kind.__name__, name), prefix + str(error))
            assert text.endswith(expected) or expected in text, (name, text)


async def test_anything_else_is_one_named_internal_error_with_its_traceback_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    failing(monkeypatch, RuntimeError("a bug"))
    caplog.set_level(logging.ERROR, logger="imap_mcp")
    async with served(settings(), mode="2026-07-28") as client:
        for name, arguments in CALLS.items():
            text = error_text(await client.call_tool(name, arguments))
            assert text.endswith(internal_error(BY_NAME[name], RuntimeError())), (name, text)
    logged = [record for record in caplog.records if record.exc_info]
    assert {record.getMessage().split()[1] for record in logged} == set(CALLS)
    assert all(record.exc_info and record.exc_info[0] is RuntimeError for record in logged)


def test_the_registry_names_every_tool_once() -> None:
    assert len(BY_NAME) == len(TOOLS) == len(CALLS) + len(ANSWERS_WITH_A_PROBLEM)
