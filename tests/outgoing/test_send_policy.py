"""The operator's send policy (IMAP_MCP_SEND_*): refusals come before anyone is asked and name the rule; a
recipient never written to before can need a second confirmation, in the dialog and on the token path."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from harness import Person, error_text, served, structured
from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult
from smtp_capture import CaptureSMTP

from imap_mcp.server.config import load_settings
from imap_mcp.server.outgoing.policy import SendPolicy
from imap_mcp.server.setting_values import ConfigError

pytestmark = pytest.mark.anyio


def _message(*to: str) -> dict[str, Any]:
    return {"to": list(to), "subject": "Hello", "body": "Hi\n"}


@pytest.mark.parametrize("tool", ["send_message", "forward_message"])
async def test_a_domain_not_allowed_is_refused_before_anyone_is_asked(
    tool: str, sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    env = {**sending_env, "IMAP_MCP_SEND_ALLOW": "example.com,*.example.net"}
    person = Person()
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=person) as client:
        arguments = _message("alice@example.com", "mallory@attacker.example")
        if tool == "forward_message":
            found = await client.call_tool("search_messages", {"mailbox": "INBOX"})
            arguments = {"id": structured(found)["messages"][0]["id"], "to": arguments["to"]}
        refused = error_text(await client.call_tool(tool, arguments))
    assert (
        "mallory@attacker.example" in refused
        and "IMAP_MCP_SEND_ALLOW allows only example.com, *.example.net" in refused
    )
    assert "nobody was asked" in refused
    assert person.shown == [] and smtp.messages == [] and smtp.envelopes == []


async def test_the_allowed_ones_go_out_after_a_yes(sending_env: dict[str, str], smtp: CaptureSMTP) -> None:
    env = {**sending_env, "IMAP_MCP_SEND_ALLOW": "example.com,*.example.net,zoe@example.org"}
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=Person()) as client:
        sent = structured(
            await client.call_tool("send_message", _message("a@example.com", "b@mail.example.net", "zoe@example.org"))
        )
    assert sent["status"] == "sent" and len(smtp.messages) == 1


def test_the_allow_list_matches_addresses_domains_and_subdomains() -> None:
    policy = SendPolicy(allow=("zoe@example.org", "example.com", "*.example.net"))
    assert policy.allows("Zoe@Example.org") and not policy.allows("max@example.org")
    assert policy.allows("a@example.com") and not policy.allows("a@sub.example.com")
    assert policy.allows("a@mail.example.net") and not policy.allows("a@example.net")
    assert not policy.allows("a@badexample.net")


async def test_more_recipients_than_the_policy_allows_are_refused_before_asking(
    sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    env = {**sending_env, "IMAP_MCP_SEND_MAX_RECIPIENTS": "2"}
    person = Person()
    async with served(load_settings(env), mode="legacy", elicitation_callback=person) as client:
        refused = error_text(
            await client.call_tool("send_message", _message("a@x.example", "b@x.example", "c@x.example"))
        )
    assert "allows at most 2 in one message (IMAP_MCP_SEND_MAX_RECIPIENTS)" in refused
    assert person.shown == [] and smtp.messages == []


def test_invalid_values_are_one_line_each() -> None:
    env = {
        "IMAP_HOST": "imap.example.com",
        "IMAP_USERNAME": "me",
        "IMAP_PASSWORD": "pw",
        "IMAP_MCP_SEND_ALLOW": "example.com, not a domain",
        "IMAP_MCP_SEND_MAX_RECIPIENTS": "101",
        "IMAP_MCP_SEND_CONFIRM_NEW": "yes",
        "IMAP_MCP_DIALOG_TIMEZONE": "Mars/Olympus",
    }
    with pytest.raises(ConfigError) as raised:
        load_settings(env)
    lines = str(raised.value).splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("IMAP_MCP_DIALOG_TIMEZONE='Mars/Olympus' is not valid: use an IANA time zone name")
    assert lines[1].startswith("IMAP_MCP_SEND_ALLOW='example.com, not a domain' is not valid ('not a domain')")
    assert lines[2] == "IMAP_MCP_SEND_MAX_RECIPIENTS='101' is not valid: use a whole number from 1 to 100."
    assert lines[3] == "IMAP_MCP_SEND_CONFIRM_NEW='yes' is not valid: use true or false."


async def test_a_new_recipient_needs_the_second_box_in_the_dialog(
    sending_env: dict[str, str], smtp: CaptureSMTP
) -> None:
    env = {**sending_env, "IMAP_MCP_SEND_CONFIRM_NEW": "true"}
    message = _message(f"new-{uuid.uuid4().hex[:8]}@example.com")
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await client.session.call_tool("send_message", message, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult) and asked.input_requests is not None
        approval = asked.input_requests["approval"]
        assert isinstance(approval, ElicitRequest) and isinstance(approval.params, ElicitRequestFormParams)
        assert approval.params.requested_schema["required"] == ["approve", "approve_new"]
        second = "Second confirmation (the operator's policy): it goes to 1 recipient never written to"
        assert second in approval.params.message

        async def answered(content: dict[str, str | int | float | bool | list[str] | None]) -> Any:
            return await client.session.call_tool(
                "send_message",
                message,
                allow_input_required=True,
                input_responses={"approval": ElicitResult(action="accept", content=content)},
                request_state=asked.request_state,
            )

        only_first = await answered({"approve": True, "approve_new": False})
        assert "did not tick the second box" in error_text(only_first) and smtp.messages == []
        both = structured(await answered({"approve": True, "approve_new": True}))
    assert both["status"] == "sent" and len(smtp.messages) == 1


async def test_a_new_recipient_needs_a_second_token(sending_env: dict[str, str], smtp: CaptureSMTP) -> None:
    env = {**sending_env, "IMAP_MCP_SEND_CONFIRM_NEW": "true"}
    message = _message(f"new-{uuid.uuid4().hex[:8]}@example.com")
    async with served(load_settings(env), mode="2026-07-28") as client:
        first = structured(await client.call_tool("send_message", message))
        second = await client.call_tool("send_message", {**message, "confirm_token": first["confirm_token"]})
        pending = structured(second)
        assert pending["status"] == "confirmation_required" and smtp.messages == []
        assert pending["confirm_token"] != first["confirm_token"]
        assert "The operator's policy asks a second confirmation" in second.content[0].text  # type: ignore[union-attr]
        sent = structured(
            await client.call_tool("send_message", {**message, "confirm_token": pending["confirm_token"]})
        )
        again = structured(
            await client.call_tool("send_message", {**message, "confirm_token": pending["confirm_token"]})
        )
    assert (sent["status"], again["status"]) == ("sent", "already_sent") and len(smtp.messages) == 1


async def test_get_server_info_shows_the_policy(sending_env: dict[str, str]) -> None:
    env = {**sending_env, "IMAP_MCP_SEND_ALLOW": "example.com", "IMAP_MCP_SEND_CONFIRM_NEW": "true"}
    env["IMAP_MCP_DIALOG_TIMEZONE"] = "Europe/Berlin"
    async with served(load_settings(env), mode="2026-07-28") as client:
        info = structured(await client.call_tool("get_server_info", {}))
    assert info["sending"] == {
        "allowed_recipients": ["example.com"],
        "max_recipients": 100,
        "confirm_new_recipients": True,
        "dialog_timezone": "Europe/Berlin",
    }


async def test_a_pushed_dialog_asks_for_both_boxes(sending_env: dict[str, str], smtp: CaptureSMTP) -> None:
    env = {**sending_env, "IMAP_MCP_SEND_CONFIRM_NEW": "true"}
    message = _message(f"new-{uuid.uuid4().hex[:8]}@example.com")
    forms: list[dict[str, Any]] = []

    def answering(content: dict[str, str | int | float | bool | list[str] | None]) -> Any:
        async def callback(context: Any, params: Any) -> ElicitResult:
            forms.append(params.requested_schema)
            return ElicitResult(action="accept", content=content)

        return callback

    async with served(load_settings(env), mode="legacy", elicitation_callback=answering({"approve": True})) as client:
        refused = error_text(await client.call_tool("send_message", message))
    assert "nothing was changed" in refused and smtp.messages == []
    both = answering({"approve": True, "approve_new": True})
    async with served(load_settings(env), mode="legacy", elicitation_callback=both) as client:
        assert structured(await client.call_tool("send_message", message))["status"] == "sent"
    assert [sorted(form["properties"]) for form in forms] == [["approve", "approve_new"]] * 2
