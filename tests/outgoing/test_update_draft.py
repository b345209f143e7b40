"""update_draft: a draft's content replaced in place, the new id answered, the old draft gone.

A draft this server saved (recorded in the store with a digest of its bytes) is replaced without asking; any
other draft (one a mail client APPENDed, or one whose bytes no longer have the recorded digest) only after a
person said yes, as for a delete. The IMAP side (the new draft APPENDed, the old one expunged) runs on every
matrix server; the asking is imap-mcp's and runs on Dovecot.
"""

from __future__ import annotations

import email
from email.message import EmailMessage
from email.policy import default as default_policy
from pathlib import Path
from typing import Any

import pytest
from harness import (
    Account,
    Person,
    answer,
    append_message,
    ask,
    dialog_text,
    error_text,
    message_ids,
    pool_without,
    served,
    structured,
)
from mcp import Client
from smtp_capture import CaptureSMTP
from test_send_draft import approved_retry, has_uidplus

from imap_mcp.server.config import load_settings
from imap_mcp.server.imap.message_ids import decode_id
from imap_mcp.server.store.drafts import DraftPlace, record_draft

pytestmark = pytest.mark.anyio

FIRST: dict[str, Any] = {"to": ["alice@example.com"], "subject": "Plan", "body": "v1: Monday.\n"}
SECOND: dict[str, Any] = {
    "to": ["bob@example.net"],
    "cc": ["carol@example.com"],
    "subject": "Plan, take two",
    "body": "v2: Tuesday.\n",
}
FOREIGN = b"From: demo@example.org\r\nTo: alice@example.com\r\nSubject: Written in a mail client\r\n\r\nMine.\r\n"


def drafts(account: Account) -> list[str]:
    return message_ids(account, "Drafts")


def draft_of(account: Account, draft_id: str) -> EmailMessage:
    """The draft `draft_id` names, as the server keeps it."""
    ref = decode_id(draft_id)
    client = account.imap()
    try:
        client.select_folder(ref.mailbox, readonly=True)
        raw = client.fetch([ref.uid], ["BODY.PEEK[]"])[ref.uid][b"BODY[]"]
    finally:
        client.logout()
    message = email.message_from_bytes(raw, policy=default_policy)
    assert isinstance(message, EmailMessage)
    return message


def foreign_draft(account: Account) -> str:
    """A draft another mail client APPENDed to Drafts (this server never saw it); its id."""
    uid = append_message(account, FOREIGN, "Drafts", (b"\\Draft",))
    [found] = [i for i in drafts(account) if decode_id(i).uid == uid]
    return found


async def save(client: Client, arguments: dict[str, Any]) -> str:
    draft_id = structured(await client.call_tool("save_draft", arguments))["id"]
    assert isinstance(draft_id, str)
    return draft_id


def assert_replaced(account: Account, updated: dict[str, Any], old_id: str) -> None:
    """The new draft holds SECOND, under the id answered; the old one is gone where the server can expunge it."""
    now = drafts(account)
    assert updated["status"] == "updated" and updated["replaced_id"] == old_id and updated["id"] in now
    message = draft_of(account, updated["id"])
    assert (message["To"], message["Cc"], message["Subject"]) == (
        "bob@example.net",
        "carol@example.com",
        SECOND["subject"],
    )
    assert message.get_content().replace("\r\n", "\n") == SECOND["body"]
    removable = has_uidplus(account)
    assert updated["old_removed"] is removable and (old_id not in now) is removable
    assert removable or "stays in Drafts" in " ".join(updated["problems"])


@pytest.mark.matrix
async def test_a_draft_this_server_saved_is_replaced_without_asking(account: Account) -> None:
    person = Person()
    async with served(account, mode="2026-07-28", elicitation_callback=person) as client:
        old = await save(client, FIRST)
        updated = structured(await client.call_tool("update_draft", {"id": old, **SECOND}))
    assert person.shown == [] and updated["approved_by"] is None
    assert_replaced(account, updated, old)


async def test_an_updated_draft_can_be_updated_again_without_asking(account: Account) -> None:
    """update_draft records the draft it saves, so the next edit of it asks no one either."""
    person = Person()
    async with served(account, mode="2026-07-28", elicitation_callback=person) as client:
        first = await save(client, FIRST)
        second = structured(await client.call_tool("update_draft", {"id": first, **FIRST, "body": "v1.5\n"}))
        third = structured(await client.call_tool("update_draft", {"id": second["id"], **SECOND}))
    assert person.shown == [] and third["approved_by"] is None
    assert_replaced(account, third, second["id"])
    assert first not in drafts(account)


@pytest.mark.matrix
async def test_a_draft_another_client_saved_is_replaced_only_after_a_person_says_yes(account: Account) -> None:
    old = foreign_draft(account)
    async with served(account, mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "update_draft", {"id": old, **SECOND})
        assert drafts(account)[-1] == old  # nothing was saved while asking
        updated = structured(await answer(client, "update_draft", {"id": old, **SECOND}, asked.request_state))
    question = dialog_text(asked)
    assert f"Replace the draft UID {decode_id(old).uid}" in question and "This server did not save it" in question
    assert "bob@example.net" in question and "Mine." not in question and "v2: Tuesday" not in question
    said = 'removed from "Drafts" for good' if has_uidplus(account) else "stays there beside the new draft"
    assert said.replace("Drafts", account.mailbox("Drafts")) in question
    assert updated["approved_by"] == "dialog"
    assert_replaced(account, updated, old)


async def test_no_to_replacing_a_foreign_draft_changes_nothing(account: Account) -> None:
    old = foreign_draft(account)
    before = drafts(account)
    person = Person(action="decline")
    async with served(account, mode="2026-07-28", elicitation_callback=person) as client:
        asked = await ask(client, "update_draft", {"id": old, **SECOND})
        refused = await answer(client, "update_draft", {"id": old, **SECOND}, asked.request_state, action="decline")
    assert "declined" in error_text(refused)
    assert drafts(account) == before and draft_of(account, old)["Subject"] == "Written in a mail client"


async def test_without_a_dialog_a_foreign_draft_takes_the_two_call_token(account: Account) -> None:
    old = foreign_draft(account)
    async with served(account, mode="2026-07-28") as client:
        pending = structured(await client.call_tool("update_draft", {"id": old, **SECOND}))
        assert drafts(account)[-1] == old
        other = await client.call_tool(
            "update_draft", {"id": old, **SECOND, "body": "other\n", "confirm_token": pending["confirm_token"]}
        )
        updated = structured(
            await client.call_tool("update_draft", {"id": old, **SECOND, "confirm_token": pending["confirm_token"]})
        )
    assert pending["status"] == "confirmation_required" and pending["id"] is None and not pending["old_removed"]
    assert "does not fit this call" in error_text(other)  # the token binds the new content too
    assert updated["approved_by"] == "token"
    assert_replaced(account, updated, old)


async def test_a_token_for_one_html_draft_does_not_replace_with_other_html_of_the_same_text(account: Account) -> None:
    """The approval binds the HTML part too: other markup whose text alternative is the same does not fit."""
    old = foreign_draft(account)
    html = {**SECOND, "body": "<p>Monday at ten.</p>", "body_format": "html"}
    async with served(account, mode="2026-07-28") as client:
        pending = structured(await client.call_tool("update_draft", {"id": old, **html}))
        token = {"confirm_token": pending["confirm_token"]}
        other = {**html, "body": "<div>Monday at ten.</div>"}
        refused = await client.call_tool("update_draft", {"id": old, **other, **token})
    assert "does not fit this call" in error_text(refused)
    assert drafts(account)[-1] == old


async def test_an_approval_replays_nothing_and_a_server_without_uidplus_keeps_the_old_draft(account: Account) -> None:
    """The approval ledger, not the mailbox, makes one approved replacement run once: where the old draft stays (no
    UIDPLUS: nothing can expunge exactly it), the same token again saves nothing more and answers the new id."""
    old = foreign_draft(account)
    pool = pool_without(account, ("UIDPLUS",))
    try:
        async with served(account, pool=pool, mode="2026-07-28") as client:
            pending = structured(await client.call_tool("update_draft", {"id": old, **SECOND}))
            token = {"confirm_token": pending["confirm_token"]}
            updated = structured(await client.call_tool("update_draft", {"id": old, **SECOND, **token}))
            after = drafts(account)
            again = structured(await client.call_tool("update_draft", {"id": old, **SECOND, **token}))
    finally:
        pool.close_all()
    assert updated["status"] == "updated" and not updated["old_removed"] and old in after and updated["id"] in after
    assert "stays in Drafts" in " ".join(updated["problems"])
    assert (again["status"], again["id"], again["old_removed"]) == ("already_updated", updated["id"], False)
    assert drafts(account) == after


async def test_a_draft_whose_bytes_differ_from_the_recorded_digest_is_asked_about(account: Account) -> None:
    """The store's row, not anything in the mailbox, says the draft is this server's: a digest that no longer
    matches its bytes (another store's row, a mailbox made again under the same UIDVALIDITY) asks a person."""
    settings = account.settings()
    person = Person(action="decline")
    async with served(settings, mode="2026-07-28", elicitation_callback=person) as client:
        old = await save(client, FIRST)
        ref = decode_id(old)
        place = DraftPlace(settings.imap.account, ref.mailbox, ref.uidvalidity, ref.uid)
        record_draft(settings.webhooks.store_url, place, "sha256:" + "0" * 64)
        refused = await client.call_tool("update_draft", {"id": old, **SECOND})
    assert "declined" in error_text(refused)
    assert len(person.shown) == 1 and "no longer what this server saved" in person.shown[0]
    assert drafts(account)[-1] == old and draft_of(account, old).get_content().replace("\r\n", "\n") == FIRST["body"]


async def test_a_draft_the_store_cannot_record_is_saved_and_the_result_says_so(
    account: Account, tmp_path: Path
) -> None:
    """A store that cannot record a draft only means update_draft will ask before replacing it: the save stands."""
    (tmp_path / "a-file").write_text("not a folder")
    broken = load_settings(account.env(IMAP_MCP_STORE=f"sqlite:///{tmp_path / 'a-file' / 'store.sqlite3'}"))
    async with served(broken, mode="2026-07-28") as client:
        saved = structured(await client.call_tool("save_draft", FIRST))
    assert saved["id"] in drafts(account)
    [problem] = saved["problems"]
    assert "the store could not record it" in problem and "update_draft will ask a person" in problem


async def test_send_draft_after_an_update_sends_the_new_content_once(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        old = await save(client, FIRST)
        updated = structured(await client.call_tool("update_draft", {"id": old, **SECOND}))
        _, retry = await approved_retry(client, {"id": updated["id"]})
        sent = structured(await retry())
        again = structured(await retry())
    assert (sent["status"], again["status"]) == ("sent", "already_sent")
    [message] = smtp.messages
    assert message["Subject"] == SECOND["subject"] and message.get_content() == SECOND["body"]
    assert message["To"] == "bob@example.net" and message["Cc"] == "carol@example.com"
    assert old not in drafts(account) and updated["id"] not in drafts(account)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        pytest.param({}, "Give the message id", id="no-id"),
        pytest.param({"id": "OLD", "mailbox": "Drafts", "uid": 1}, "not both", id="id-and-mailbox"),
        pytest.param({"id": "not-an-id"}, "is not a message id", id="not-an-id"),
        pytest.param({"id": "OLD", "in_reply_to": "INBOX", "to": ["a@example.org"]}, "leave to, cc", id="reply"),
        pytest.param({"id": "OLD", "to": ["not an address"]}, "not an address", id="bad-address"),
        pytest.param({"id": "OLD", "subject": "Plan\r\nBcc: eve@example.org"}, "line break", id="header-injection"),
    ],
)
async def test_bad_arguments_are_refused_and_change_nothing(
    account: Account, arguments: dict[str, Any], said: str
) -> None:
    person = Person()
    async with served(account, mode="2026-07-28", elicitation_callback=person) as client:
        old = await save(client, FIRST)
        named = {"OLD": old, "INBOX": message_ids(account, "INBOX")[0]}
        before = drafts(account)
        call = {"body": "v2\n", **{k: named.get(v, v) if isinstance(v, str) else v for k, v in arguments.items()}}
        text = error_text(await client.call_tool("update_draft", call))
    assert said in text and text.startswith("Error executing tool update_draft: Nothing was changed"), text
    assert drafts(account) == before and person.shown == []


async def test_a_message_outside_drafts_or_a_draft_gone_is_refused(account: Account) -> None:
    inbox = message_ids(account, "INBOX")[0]
    async with served(account, mode="2026-07-28", elicitation_callback=Person()) as client:
        outside = error_text(await client.call_tool("update_draft", {"id": inbox, **SECOND}))
        old = await save(client, FIRST)
        updated = structured(await client.call_tool("update_draft", {"id": old, **SECOND}))
        before = drafts(account)
        gone = error_text(await client.call_tool("update_draft", {"id": old, **FIRST}))
    assert "update_draft replaces drafts of the Drafts mailbox" in outside
    assert "no longer in" in gone and drafts(account) == before and updated["id"] in before
