"""`imap-mcp check` prints the operator's send policy after the SMTP steps."""

from __future__ import annotations

import pytest
from check_output import run_check
from harness import Account
from smtp_capture import SENDER, CaptureSMTP


@pytest.mark.slow
def test_check_prints_the_send_policy(account: Account) -> None:
    policy = {"IMAP_MCP_SEND_ALLOW": "example.com,*.example.net", "IMAP_MCP_SEND_MAX_RECIPIENTS": "5"}
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        output = run_check(account.env(**smtp.env(), **policy, SMTP_FROM=SENDER))
    assert output.code == 0, output.text
    lines = [line for line in output.steps if line.name == "send policy"]
    assert [(line.outcome, line.detail) for line in lines] == [
        ("ok", "recipients allowed: example.com, *.example.net"),
        ("ok", "recipients per message: at most 5"),
        ("ok", "second confirmation for a recipient never written to before: not asked for"),
    ]
    assert output.step_names.index("send policy") > output.step_names.index("SMTP AUTH")


def test_the_check_steps_say_the_policy(account: Account) -> None:
    """The same lines, from `check.run_check` in this process (the fast lane's)."""
    from imap_mcp.server.check import run_check as steps_of
    from imap_mcp.server.config import load_settings

    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        env = account.env(**smtp.env(), IMAP_MCP_SEND_CONFIRM_NEW="true", SMTP_FROM=SENDER)
        steps = steps_of(load_settings(env))
    details = [step.detail for step in steps if step.name == "send policy"]
    assert details == [
        "recipients allowed: any address (IMAP_MCP_SEND_ALLOW is not set)",
        "recipients per message: at most 100",
        "second confirmation for a recipient never written to before: asked for",
    ]
