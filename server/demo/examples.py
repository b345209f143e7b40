"""One real call of every tool against the demo's mailbox, for the tools page (`docs/hooks.py`).

`tool_examples()` runs the demo's private Dovecot with its sample mail, its SMTP sink and a store of its own, in a
folder it removes after, as `imap-mcp demo` does; saves a webhook for the account as `imap-mcp webhook set` would
(to a receiver that does not exist: no watcher runs, nothing is delivered); then calls each tool once over an
in-memory MCP client of the 2026-07-28 era, in an order where each call finds what it needs (a draft saved before
it is sent), a person saying yes to every question. Whatever fails (Dovecot missing, a tool without an example)
raises, so that the page is never written from stale or partial examples.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from ..config import Settings
from ..errors import ImapMcpError
from ..serving.app import build_server
from ..setting_values import Secret
from ..webhooks.cipher import StoreCipher
from ..webhooks.operations import webhook_store
from ..webhooks.rows import save_endpoint
from .command import demo_folder, demo_mailbox

#: where the example webhook would deliver: a documentation address that nothing answers
EXAMPLE_WEBHOOK = "https://receiver.example/imap-mcp"

#: what a call's arguments are made of: the ids found so far (`subject → id`), and the results before it
Found = dict[str, Any]


@dataclass(frozen=True)
class Example:
    """One call of `tool`: its arguments, and its result's structured content as the client got it."""

    tool: str
    arguments: dict[str, Any]
    structured: dict[str, Any] | None
    #: what a person was asked before it ran (the dialogs' texts), in order
    asked: tuple[str, ...]


def _id(found: Found, subject: str) -> str:
    ids: dict[str, str] = found["ids"]
    return ids[subject]


#: each tool's call, in the order they run; arguments made from what was found so far
CALLS: tuple[tuple[str, Callable[[Found], dict[str, Any]]], ...] = (
    ("list_mailboxes", lambda found: {"counts": True}),
    ("search_messages", lambda found: {"mailbox": "INBOX", "limit": 3}),
    ("get_message", lambda found: {"id": _id(found, "Invoice and overview")}),
    ("get_thread", lambda found: {"id": _id(found, "Re: Project kickoff")}),
    ("get_attachments", lambda found: {"id": _id(found, "Invoice and overview"), "part_ids": ["3"]}),
    ("list_new_messages", lambda found: {"mailbox": "INBOX", "limit": 2}),
    ("set_message_flags", lambda found: {"ids": [_id(found, "Team lunch on Friday?")], "add": ["\\Seen"]}),
    ("move_messages", lambda found: {"ids": [_id(found, "Your weekly deals")], "destination": "Archive"}),
    ("delete_messages", lambda found: {"ids": [_id(found, "Urgent: account notice")]}),
    ("manage_mailbox", lambda found: {"action": "create", "mailbox": "Receipts"}),
    (
        "save_draft",
        lambda found: {"to": ["alice@example.com"], "subject": "Agenda for Monday", "body": "Agenda:\n- budget\n"},
    ),
    (
        "update_draft",
        lambda found: {
            "id": found["save_draft"]["id"],
            "to": ["alice@example.com"],
            "subject": "Agenda for Monday",
            "body": "Agenda:\n- budget\n- hiring\n",
        },
    ),
    (
        "send_message",
        lambda found: {"to": ["bob@example.net"], "subject": "Lunch", "body": "Friday at noon works for me.\n"},
    ),
    ("reply_to_message", lambda found: {"id": _id(found, "Quarterly report"), "body": "Thanks, Alice!\n"}),
    ("send_draft", lambda found: {"id": found["update_draft"]["id"]}),
    (
        "forward_message",
        lambda found: {"id": _id(found, "Invoice and overview"), "to": ["bob@example.net"], "body": "For you.\n"},
    ),
    ("get_server_info", lambda found: {}),
    ("get_webhook_status", lambda found: {}),
    ("set_webhook_enabled", lambda found: {"enabled": False}),
    ("set_webhook_outbox_limits", lambda found: {"retention": "14d", "max_events": 500}),
)


class ExampleFailed(ImapMcpError):
    """A tool's example could not be run as written; the message says which and why."""


def tool_examples() -> dict[str, Example]:
    """Every tool's example, by tool name (see the module)."""
    with demo_folder() as folder, demo_mailbox(folder, secrets.token_urlsafe(16)) as settings:
        keys = (Secret(secrets.token_urlsafe(32)),)
        settings = dataclasses.replace(settings, webhooks=dataclasses.replace(settings.webhooks, store_keys=keys))
        _save_webhook(settings)
        return anyio.run(_run_all, settings)


def _save_webhook(settings: Settings) -> None:
    """The account's webhook saved and on, as `imap-mcp webhook set --url EXAMPLE_WEBHOOK` saves it."""
    keys = tuple(key.reveal() for key in settings.webhooks.store_keys)
    store = webhook_store(settings.webhooks.store_url, settings.imap.account, settings.imap.legacy_account, keys)
    with store.transaction() as tx:
        tx.lock_account(settings.imap.account)
        save_endpoint(tx, StoreCipher(list(keys)), settings.imap.account, EXAMPLE_WEBHOOK, None)


class _Person:
    """Says yes to every question, and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})


async def _run_all(settings: Settings) -> dict[str, Example]:
    person = _Person()
    examples: dict[str, Example] = {}
    async with Client(build_server(settings), mode="2026-07-28", elicitation_callback=person) as client:
        found: Found = {"ids": await _ids(client)}
        for tool, arguments_of in CALLS:
            arguments = arguments_of(found)
            asked_before = len(person.asked)
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                said = " ".join(getattr(item, "text", "") for item in result.content)
                raise ExampleFailed(f"the example of {tool} failed against the demo: {said}")
            found[tool] = result.structured_content
            examples[tool] = Example(tool, arguments, result.structured_content, tuple(person.asked[asked_before:]))
    return examples


async def _ids(client: Client) -> dict[str, str]:
    """The id of each INBOX message, by its subject (the sample mail's subjects are all different)."""
    listed = await client.call_tool("search_messages", {"mailbox": "INBOX", "limit": 100})
    messages: list[dict[str, Any]] = (listed.structured_content or {}).get("messages", [])
    return {_plain(message["subject"]): message["id"] for message in messages}


def _plain(subject: Any) -> str:
    """A subject as the sample mail wrote it, whether a result gives it as a string or fenced (`{"text": …}`)."""
    return str(subject.get("text", subject) if isinstance(subject, dict) else subject)
