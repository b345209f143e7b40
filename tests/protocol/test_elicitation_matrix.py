"""Each tool asks exactly as the table says, for every era, transport, client and ELICITATION setting.

| tool | asks |
|---|---|
| delete_messages, move_messages (both modes), manage_mailbox delete | always: a dialog, else the token |
| manage_mailbox rename | the two-call token only |
| manage_mailbox create, set_message_flags, save_draft | never |
| update_draft | a draft this server did not save: always, a dialog, else the token; one it saved: never |

The whole matrix (both eras, a client with and without elicitation, ELICITATION true and false)
runs three times: in-process, over real stdio, and over real Streamable HTTP. Each combination
starts one server and calls every changing tool in it; HTTP adds the legacy client without a back
channel (`IMAP_MCP_LEGACY_HTTP=stateless`), which gets the token.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from harness import MODES, Account, Person, append_message, http_server, message_ids, served, stdio_params
from mcp import Client

pytestmark = pytest.mark.anyio

ANNOTATION_KEYS = {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
CHANGING_TOOLS = {
    "delete_messages": (True, True),
    "move_messages": (True, False),
    "manage_mailbox": (True, False),
    "set_message_flags": (False, True),
    "save_draft": (False, False),
    "update_draft": (True, False),
}


@dataclasses.dataclass
class Run:
    """One client of the matrix: which way it should be asked, and what it was shown."""

    client: Client
    person: Person | None
    dialog: str | None  #: "dialog" / "push" when a dialog can be shown, else None (token)

    async def guarded(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Call a tool that must ask; check it asked the way it should; return the final result."""
        shown_before = len(self.person.shown) if self.person else 0
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, result.content
        content: dict[str, Any] | None = result.structured_content
        assert content is not None
        if self.dialog:
            assert self.person is not None and len(self.person.shown) == shown_before + 1
            assert content["approved_by"] == self.dialog
            return content
        assert content["status"] == "confirmation_required" and content["confirm_token"]
        return await self.token_second_call(tool, args, content["confirm_token"])

    async def token_second_call(self, tool: str, args: dict[str, Any], token: str) -> dict[str, Any]:
        done = await self.client.call_tool(tool, {**args, "confirm_token": token})
        assert not done.is_error, done.content
        assert done.structured_content["approved_by"] == "token"
        content: dict[str, Any] = done.structured_content
        return content

    async def unasked(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        shown_before = len(self.person.shown) if self.person else 0
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, result.content
        assert (
            "confirm_token" not in (result.structured_content or {}) or not result.structured_content["confirm_token"]
        )
        assert (len(self.person.shown) if self.person else 0) == shown_before
        content: dict[str, Any] = result.structured_content
        return content


def expected_dialog(mode: str, has_person: bool, elicitation: bool) -> str | None:
    if not (has_person and elicitation):
        return None
    return "dialog" if mode == "2026-07-28" else "push"


async def exercise_every_tool(run: Run, account: Account) -> None:
    inbox = message_ids(account, "INBOX")
    assert (await run.guarded("delete_messages", {"ids": inbox[:1]}))["destination"] == "Trash"
    assert (await run.guarded("delete_messages", {"ids": inbox[1:2], "permanent": True}))["count"] == 1
    assert len((await run.guarded("move_messages", {"ids": inbox[2:3], "destination": "Archive"}))["new_ids"]) == 1
    copy = {"ids": inbox[3:4], "destination": "Junk", "mode": "copy"}
    assert (await run.guarded("move_messages", copy))["operation"] == "copy"
    assert (await run.unasked("manage_mailbox", {"action": "create", "mailbox": "Matrix"}))["status"] == "done"
    rename = {"action": "rename", "mailbox": "Matrix", "new_name": "Matrix2"}
    shown_before = len(run.person.shown) if run.person else 0
    first = await run.client.call_tool("manage_mailbox", rename)
    assert first.structured_content["status"] == "confirmation_required"
    assert "can be undone" in first.content[0].text  # type: ignore[union-attr]
    await run.token_second_call("manage_mailbox", rename, first.structured_content["confirm_token"])
    assert (len(run.person.shown) if run.person else 0) == shown_before
    assert (await run.guarded("manage_mailbox", {"action": "delete", "mailbox": "Matrix2"}))["status"] == "done"
    flags = await run.unasked("set_message_flags", {"ids": inbox[4:5], "add": ["\\Flagged", "Work"]})
    assert flags["ids"] == inbox[4:5]
    draft = {"to": ["bob@example.net"], "subject": "Notes", "body": "Hello"}
    saved = await run.unasked("save_draft", draft)
    assert saved["mailbox"] == "Drafts"
    own = await run.unasked("update_draft", {"id": saved["id"], **draft, "body": "Hello again"})
    assert own["status"] == "updated" and own["approved_by"] is None
    uid = append_message(account, b"To: bob@example.net\r\nSubject: Mine\r\n\r\nA person's draft\r\n", "Drafts")
    foreign = next(i for i in message_ids(account, "Drafts") if i.endswith(f".{uid}"))
    assert (await run.guarded("update_draft", {"id": foreign, **draft}))["status"] == "updated"
    assert message_ids(account, "INBOX") == inbox[3:]
    assert len(message_ids(account, "Archive")) == 2 and len(message_ids(account, "Junk")) == 2


@pytest.mark.parametrize(
    ("mode", "has_person", "elicitation"), list(itertools.product(MODES, (True, False), (True, False)))
)
async def test_in_process_every_tool_asks_as_the_table_says(
    account: Account, mode: str, has_person: bool, elicitation: bool
) -> None:
    settings = dataclasses.replace(account.settings(), elicitation=elicitation)
    person = Person() if has_person else None
    options: dict[str, Any] = {"elicitation_callback": person} if person else {}
    async with served(settings, mode=mode, **options) as client:
        await exercise_every_tool(Run(client, person, expected_dialog(mode, has_person, elicitation)), account)


MATRIX = list(itertools.product(MODES, (True, False), (True, False)))
MATRIX_IDS = [f"{mode}-{'person' if p else 'no elicitation'}-ELICITATION={str(e).lower()}" for mode, p, e in MATRIX]


async def exercise_over(target: Any, account: Account, mode: str, person: Person | None, dialog: str | None) -> None:
    """Connect to a running server (stdio parameters or an HTTP URL) and call every changing tool."""
    options: dict[str, Any] = {"elicitation_callback": person} if person else {}
    async with Client(target, mode=mode, **options) as client:
        await exercise_every_tool(Run(client, person, dialog), account)


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "has_person", "elicitation"), MATRIX, ids=MATRIX_IDS)
async def test_over_stdio_every_tool_asks_as_the_table_says(
    account: Account, mode: str, has_person: bool, elicitation: bool
) -> None:
    person = Person() if has_person else None
    env = account.env(ELICITATION=str(elicitation).lower())
    await exercise_over(stdio_params(env), account, mode, person, expected_dialog(mode, has_person, elicitation))


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "has_person", "elicitation"), MATRIX, ids=MATRIX_IDS)
async def test_over_http_every_tool_asks_as_the_table_says(
    account: Account, mode: str, has_person: bool, elicitation: bool
) -> None:
    person = Person() if has_person else None
    env = account.env(IMAP_MCP_SEAL_KEYS="k" * 40, ELICITATION=str(elicitation).lower())
    with http_server(env) as url:
        await exercise_over(url, account, mode, person, expected_dialog(mode, has_person, elicitation))


@pytest.mark.slow
async def test_over_stateless_http_a_legacy_client_gets_the_token(account: Account) -> None:
    """No back channel for a 2025-11-25 client: the token, although it declared elicitation."""
    env = account.env(IMAP_MCP_SEAL_KEYS="k" * 40, IMAP_MCP_LEGACY_HTTP="stateless")
    with http_server(env) as url:
        await exercise_over(url, account, "legacy", Person(), None)


async def test_every_changing_tool_states_all_four_annotations(account: Account) -> None:
    async with served(account) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, (destructive, idempotent) in CHANGING_TOOLS.items():
        wire = tools[name].annotations.model_dump(by_alias=True, exclude_none=True)  # type: ignore[union-attr]
        assert wire.keys() >= ANNOTATION_KEYS, name
        assert (wire["readOnlyHint"], wire["destructiveHint"], wire["idempotentHint"]) == (
            False,
            destructive,
            idempotent,
        ), name
        assert wire["openWorldHint"] is True
