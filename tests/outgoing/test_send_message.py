"""send_message end to end: SDK client → imap-mcp → guard → aiosmtpd listener and Dovecot's Sent."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Literal

import anyio
import pytest
from harness import MODES, Account, Person, error_text, pool_without, served, stdio_params, structured
from mcp import Client
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult, InputResponses
from smtp_capture import SENDER, CaptureSMTP, Gate

from imap_mcp.server.config import Settings, load_settings

pytestmark = pytest.mark.anyio

SentCopies = Callable[[str], list[tuple[bytes, ...]]]
BODY = "Hi Alice,\n\nlunch on Friday at noon?\n\nDemo\n"
MESSAGE: dict[str, Any] = {
    "to": ["Alice Example <alice@example.com>"],
    "cc": ["bob@example.net"],
    "bcc": ["eve@example.org"],
    "subject": "Lunch on Friday",
    "body": BODY,
}
YES: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}
#: what every Message-ID imap-mcp makes for SENDER contains (a HEADER search matches substrings)
OURS = ".imap-mcp@example.org>"
CONCURRENT = 3


@pytest.mark.matrix
@pytest.mark.parametrize("mode", MODES)
async def test_a_persons_yes_sends_one_message_and_files_it_in_sent(
    mode: str, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person, sent_copies: SentCopies
) -> None:
    async with served(load_settings(sending_env), mode=mode, elicitation_callback=person) as client:
        result = structured(await client.call_tool("send_message", MESSAGE))
    assert result["status"] == "sent" and result["recipients"] == 3 and result["saved_to_sent"]
    assert result["approved_by"] == ("push" if mode == "legacy" else "dialog")
    [message], [envelope] = smtp.messages, smtp.envelopes
    assert envelope.mail_from == "demo@example.org"
    assert envelope.rcpt_tos == ("alice@example.com", "bob@example.net", "eve@example.org")
    assert envelope.authenticated
    assert message["From"] == SENDER
    assert message["To"] == "Alice Example <alice@example.com>"
    assert message["Cc"] == "bob@example.net"
    assert "Bcc" not in message
    assert message["Subject"] == "Lunch on Friday"
    assert message["Message-ID"] == result["message_id"]
    assert message["Date"] is not None
    assert message.get_content() == BODY
    assert sent_copies(result["message_id"]) == [(b"\\Seen",)]
    [question] = person.shown
    assert "to 3 recipients" in question
    assert "To: alice@example.com\nCc: bob@example.net\nBcc: eve@example.org" in question
    assert 'Subject, as written by the assistant: "Lunch on Friday"' in question
    assert f"Body, as written by the assistant: {len(BODY)} characters" in question
    assert "lunch on Friday at noon" not in question


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("action", "approve"), [("decline", False), ("cancel", False), ("accept", False)], ids=["no", "closed", "unticked"]
)
async def test_a_no_sends_nothing(
    mode: str,
    action: Literal["accept", "decline", "cancel"],
    approve: bool,
    sending_env: dict[str, str],
    smtp: CaptureSMTP,
) -> None:
    answer = Person(action=action, ticked=approve)
    async with served(load_settings(sending_env), mode=mode, elicitation_callback=answer) as client:
        result = await client.call_tool("send_message", MESSAGE)
    assert "nothing was changed" in error_text(result)
    assert len(answer.shown) == 1 and smtp.messages == []


async def test_a_changed_recipient_after_approval_asks_again(sending_env: dict[str, str], smtp: CaptureSMTP) -> None:
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=Person()) as c:
        asked = await c.session.call_tool("send_message", MESSAGE, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        changed: dict[str, Any]
        for changed in ({"to": ["mallory@attacker.example"]}, {"bcc": []}, {"subject": "Lunch?"}, {"body": BODY + "!"}):
            retried = await c.session.call_tool(
                "send_message",
                {**MESSAGE, **changed},
                input_responses=YES,
                request_state=asked.request_state,
                allow_input_required=True,
            )
            assert isinstance(retried, InputRequiredResult), changed
    assert smtp.messages == []


@pytest.mark.matrix
async def test_a_replayed_approved_retry_sends_nothing_more(
    sending_env: dict[str, str], smtp: CaptureSMTP, sent_copies: SentCopies
) -> None:
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=Person()) as c:
        asked = await c.session.call_tool("send_message", MESSAGE, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        retry: dict[str, Any] = {"input_responses": YES, "request_state": asked.request_state}
        first = structured(await c.session.call_tool("send_message", MESSAGE, **retry))
        again = structured(await c.session.call_tool("send_message", MESSAGE, **retry))
    assert (first["status"], again["status"]) == ("sent", "already_sent")
    assert again["message_id"] == first["message_id"]
    assert len(smtp.messages) == 1
    assert len(sent_copies(first["message_id"])) == 1


async def test_a_second_approval_of_the_same_message_sends_it_again(
    sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    """Only a replay is held back: a person who approves the same text twice gets two messages."""
    settings = load_settings(sending_env)
    for _ in range(2):
        async with served(settings, mode="legacy", elicitation_callback=Person()) as client:
            assert structured(await client.call_tool("send_message", MESSAGE))["status"] == "sent"
    assert len(smtp.messages) == 2
    assert smtp.messages[0]["Message-ID"] != smtp.messages[1]["Message-ID"]


async def test_without_a_dialog_the_token_sends_once_and_a_replay_sends_nothing_more(
    sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    async with served(load_settings(sending_env), mode="2026-07-28") as client:
        pending = structured(await client.call_tool("send_message", MESSAGE))
        assert pending["status"] == "confirmation_required" and smtp.messages == []
        confirmed = {**MESSAGE, "confirm_token": pending["confirm_token"]}
        changed = await client.call_tool("send_message", {**confirmed, "cc": ["mallory@attacker.example"]})
        assert "does not fit this call" in error_text(changed) and smtp.messages == []
        sent = structured(await client.call_tool("send_message", confirmed))
        replayed = structured(await client.call_tool("send_message", confirmed))
    assert (sent["status"], sent["approved_by"], replayed["status"]) == ("sent", "token", "already_sent")
    assert len(smtp.messages) == 1


async def _at_once(
    gate: Gate, call: Callable[[], Awaitable[CallToolResult | InputRequiredResult]]
) -> list[dict[str, Any]]:
    """`call` made CONCURRENT times at the same time; each result once it has returned."""
    results: list[dict[str, Any]] = []

    async def one() -> None:
        try:
            results.append(structured(await call()))
        finally:
            gate.returned()

    async with anyio.create_task_group() as group:
        for _ in range(CONCURRENT):
            group.start_soon(one)
    return results


@contextlib.contextmanager
def _gated_sending(account: Account) -> Iterator[tuple[Gate, CaptureSMTP, Settings]]:
    """An SMTP listener whose DATA waits for CONCURRENT callers, and the settings that send through it."""
    gate = Gate(CONCURRENT)
    with CaptureSMTP(auth=(account.username, account.password), gate=gate) as smtp:
        yield gate, smtp, load_settings(account.env(**smtp.env(), SMTP_FROM=SENDER))


def _sent_once(results: list[dict[str, Any]], smtp: CaptureSMTP) -> str:
    """The one message sent: one result says sent, the others that another attempt is sending it."""
    assert sorted(r["status"] for r in results) == ["being_sent"] * (CONCURRENT - 1) + ["sent"]
    [message] = smtp.messages
    assert {r["message_id"] for r in results} == {message["Message-ID"]}
    return str(message["Message-ID"])


@pytest.mark.matrix
@pytest.mark.parametrize("save_to_sent", [True, False], ids=["save-to-sent", "no-sent-copy"])
async def test_concurrent_replays_of_an_approved_dialog_send_one_message(
    save_to_sent: bool, account: Account, sent_copies: SentCopies
) -> None:
    arguments = {**MESSAGE, "save_to_sent": save_to_sent}
    with _gated_sending(account) as (gate, smtp, settings):
        async with served(settings, mode="2026-07-28", elicitation_callback=Person()) as c:
            asked = await c.session.call_tool("send_message", arguments, allow_input_required=True)
            assert isinstance(asked, InputRequiredResult)
            results = await _at_once(
                gate,
                lambda: c.session.call_tool(
                    "send_message",
                    arguments,
                    allow_input_required=True,
                    input_responses=YES,
                    request_state=asked.request_state,
                ),
            )
    message_id = _sent_once(results, smtp)
    assert sent_copies(message_id) == ([(b"\\Seen",)] if save_to_sent else [])


@pytest.mark.matrix
@pytest.mark.parametrize("save_to_sent", [True, False], ids=["save-to-sent", "no-sent-copy"])
async def test_concurrent_uses_of_one_confirm_token_send_one_message(
    save_to_sent: bool, account: Account, sent_copies: SentCopies
) -> None:
    arguments = {**MESSAGE, "save_to_sent": save_to_sent}
    with _gated_sending(account) as (gate, smtp, settings):
        async with served(settings, mode="2026-07-28") as client:
            pending = structured(await client.call_tool("send_message", arguments))
            confirmed = {**arguments, "confirm_token": pending["confirm_token"]}
            results = await _at_once(gate, lambda: client.call_tool("send_message", confirmed))
    message_id = _sent_once(results, smtp)
    assert sent_copies(message_id) == ([(b"\\Seen",)] if save_to_sent else [])


@pytest.mark.matrix
async def test_a_failed_send_leaves_no_copy_in_sent_and_a_retry_of_the_approval_sends_it_once(
    account: Account, sent_copies: SentCopies
) -> None:
    with CaptureSMTP(fail_data_code=451) as flaky:
        settings = load_settings(account.env(**flaky.env(), SMTP_FROM=SENDER))
        async with served(settings, mode="2026-07-28", elicitation_callback=Person()) as c:
            asked = await c.session.call_tool("send_message", MESSAGE, allow_input_required=True)
            assert isinstance(asked, InputRequiredResult)
            retry: dict[str, Any] = {"input_responses": YES, "request_state": asked.request_state}
            failed = await c.session.call_tool("send_message", MESSAGE, **retry)
            assert "did not take the message (451" in error_text(failed)
            assert sent_copies(OURS) == [] and flaky.messages == []
            flaky.fail_data_code = None
            sent = structured(await c.session.call_tool("send_message", MESSAGE, **retry))
            again = structured(await c.session.call_tool("send_message", MESSAGE, **retry))
    assert (sent["status"], again["status"]) == ("sent", "already_sent")
    assert [m["Message-ID"] for m in flaky.messages] == [sent["message_id"]]
    assert sent_copies(OURS) == [(b"\\Seen",)]


@pytest.mark.matrix
async def test_without_uidplus_a_replay_after_the_send_still_sends_nothing_more(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, sent_copies: SentCopies
) -> None:
    """No APPENDUID: Sent is checked before sending and the copy filed after it (concurrency not excluded)."""
    pool = pool_without(account, capabilities=("UIDPLUS",))
    async with served(load_settings(sending_env), pool=pool, mode="2026-07-28") as client:
        pending = structured(await client.call_tool("send_message", MESSAGE))
        confirmed = {**MESSAGE, "confirm_token": pending["confirm_token"]}
        sent = structured(await client.call_tool("send_message", confirmed))
        replayed = structured(await client.call_tool("send_message", confirmed))
    assert (sent["status"], replayed["status"]) == ("sent", "already_sent")
    assert len(smtp.messages) == 1
    assert sent_copies(sent["message_id"]) == [(b"\\Seen",)]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"subject": "Hi\r\nBcc: eve@evil.example"}, id="crlf-in-subject"),
        pytest.param({"subject": "Hi\nX-Injected: 1"}, id="lf-in-subject"),
        pytest.param({"to": ["alice@example.com\r\nBcc: eve@evil.example"]}, id="crlf-in-to"),
        pytest.param({"cc": ["Bob\n <bob@example.net>"]}, id="lf-in-cc-name"),
        pytest.param({"bcc": ["eve@example.org\rX: y"]}, id="cr-in-bcc"),
        pytest.param({"subject": "Hi\u2028Bcc: eve@evil.example"}, id="line-separator-in-subject"),
        pytest.param({"subject": "Hi\u2029there"}, id="paragraph-separator-in-subject"),
        pytest.param({"subject": "Hi\x85there"}, id="next-line-in-subject"),
        pytest.param({"to": ["Alice\u2028 <alice@example.com>"]}, id="line-separator-in-to-name"),
        pytest.param({"cc": ["Bob\x1c <bob@example.net>"]}, id="file-separator-in-cc-name"),
        pytest.param({"to": ["alice@example.com, eve@evil.example"]}, id="two-addresses-in-one"),
        pytest.param({"to": ["not-an-address"]}, id="no-domain"),
    ],
)
async def test_injection_attempts_are_refused_before_anyone_is_asked(
    bad: dict[str, Any], sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as c:
        result = await c.call_tool("send_message", {**MESSAGE, **bad})
    assert "Nothing was sent" in error_text(result)
    assert person.shown == [] and smtp.messages == []


async def test_a_failed_send_after_approval_says_so_and_files_nothing(
    account: Account, person: Person, sent_copies: SentCopies
) -> None:
    with CaptureSMTP(fail_data_code=554) as failing:
        settings = load_settings(account.env(**failing.env(), SMTP_FROM=SENDER))
        async with served(settings, mode="2026-07-28", elicitation_callback=person) as client:
            result = await client.call_tool("send_message", MESSAGE)
    assert "did not take the message (554" in error_text(result)
    assert len(person.shown) == 1
    assert failing.messages == [] and sent_copies(OURS) == []


async def test_without_smtp_host_the_sending_tools_are_not_offered(account: Account) -> None:
    async with served(load_settings(account.env()), mode="2026-07-28") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert not names & {"send_message", "reply_to_message"}


async def test_the_sending_tools_state_their_annotations(sending_env: dict[str, str]) -> None:
    async with served(load_settings(sending_env), mode="2026-07-28") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in ("send_message", "reply_to_message"):
        hints = tools[name].annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (
            False,
            True,
            False,
            True,
        )


@pytest.mark.slow
async def test_a_person_approves_a_send_over_a_real_stdio_process(
    sending_env: dict[str, str], smtp: CaptureSMTP, person: Person, sent_copies: SentCopies
) -> None:
    async with Client(stdio_params(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        result = structured(await client.call_tool("send_message", MESSAGE))
    assert result["status"] == "sent" and len(person.shown) == 1
    assert [m["Message-ID"] for m in smtp.messages] == [result["message_id"]]
    assert sent_copies(result["message_id"]) == [(b"\\Seen",)]


async def test_an_account_without_a_sent_mailbox_asks_no_one_and_says_why(
    account: Account, sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    pool = pool_without(account, mailboxes=("Sent",))
    async with served(load_settings(sending_env), pool=pool, mode="2026-07-28", elicitation_callback=person) as client:
        result = await client.call_tool("send_message", MESSAGE)
    assert "Nothing was sent: The account has no Sent mailbox" in error_text(result)
    assert person.shown == [] and smtp.messages == []
