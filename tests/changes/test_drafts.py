"""save_draft: appended to Drafts with \\Draft, addresses checked, nothing sent, never a question."""

from __future__ import annotations

import email

import pytest
from harness import Account, error_text, message_ids, served

pytestmark = pytest.mark.anyio


@pytest.mark.matrix
async def test_a_draft_lands_in_drafts_flagged_draft(account: Account) -> None:
    args = {"to": ["Bob <bob@example.net>"], "cc": ["carol@example.com"], "subject": "Plan", "body": "Hi Bob"}
    async with served(account, mode="2026-07-28") as client:
        result = await client.call_tool("save_draft", args)
    draft_id = result.structured_content["id"]
    assert draft_id == message_ids(account, "Drafts")[-1]
    direct = account.imap()
    direct.select_folder(account.mailbox("Drafts"), readonly=True)
    uid = int(draft_id.rsplit(".", 1)[1])
    fetched = direct.fetch([uid], ["FLAGS", "RFC822"])[uid]
    direct.logout()
    assert b"\\Draft" in fetched[b"FLAGS"]
    message = email.message_from_bytes(fetched[b"RFC822"])
    assert message["To"] == "Bob <bob@example.net>" and message["Cc"] == "carol@example.com"
    assert message["Subject"] == "Plan"


@pytest.mark.parametrize(
    "args",
    [
        {"to": ["bob@example.net"], "subject": "Plan\r\nBcc: eve@example.org", "body": "x"},
        {"to": ["not an address"], "subject": "Plan", "body": "x"},
    ],
)
async def test_a_header_injection_or_a_bad_address_is_refused(account: Account, args: dict[str, object]) -> None:
    before = message_ids(account, "Drafts")
    async with served(account) as client:
        result = await client.call_tool("save_draft", args)
    assert "Nothing was saved:" in error_text(result)
    assert message_ids(account, "Drafts") == before


@pytest.mark.parametrize(
    ("args", "why"),
    [
        pytest.param({"subject": "Plan\u2028Bcc: eve@example.org"}, "line break", id="line-separator-in-subject"),
        pytest.param({"subject": "Plan\x85B"}, "line break", id="next-line-in-subject"),
        pytest.param({"to": ["Bob\u2029 <bob@example.net>"]}, "could add headers", id="separator-in-name"),
    ],
)
async def test_a_line_separator_in_a_header_is_refused_with_a_clear_error(
    account: Account, args: dict[str, object], why: str
) -> None:
    before = message_ids(account, "Drafts")
    async with served(account, mode="2026-07-28") as client:
        result = await client.call_tool(
            "save_draft", {"to": ["bob@example.net"], "subject": "Plan", "body": "x", **args}
        )
    text = error_text(result)
    assert "Nothing was saved:" in text and why in text
    assert message_ids(account, "Drafts") == before
