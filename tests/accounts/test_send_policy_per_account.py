"""The send policy per account: an accounts file's IMAP_MCP_SEND_* override the environment's, and an invalid value is
one line naming the account."""

from __future__ import annotations

from pathlib import Path

import pytest

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.setting_values import ConfigError

ENV = {
    "IMAP_HOST": "imap.example.com",
    "IMAP_PASSWORD": "env-password",
    "SMTP_HOST": "smtp.example.com",
    "IMAP_MCP_SEND_ALLOW": "example.com",
}


def _file(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "accounts.toml"
    path.write_text(text)
    path.chmod(0o600)
    return {**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)}


def test_each_account_has_its_own_send_policy(tmp_path: Path) -> None:
    env = _file(
        tmp_path,
        """
[accounts.alice]
auth_tokens = ["alice-token-0123456789abcdef"]
IMAP_USERNAME = "alice@example.com"

[accounts.bob]
auth_tokens = ["bob-token-0123456789abcdef"]
IMAP_USERNAME = "bob@example.com"
IMAP_MCP_SEND_ALLOW = "*.partner.example, carol@example.org"
IMAP_MCP_SEND_MAX_RECIPIENTS = 3
IMAP_MCP_SEND_CONFIRM_NEW = true
IMAP_MCP_DIALOG_TIMEZONE = "Europe/Berlin"
""",
    )
    alice, bob = load_accounts(env).accounts
    assert alice.settings.send_policy.allow == ("example.com",) and not alice.settings.send_policy.confirm_new
    assert bob.settings.send_policy.allow == ("*.partner.example", "carol@example.org")
    assert (bob.settings.send_policy.max_recipients, bob.settings.send_policy.confirm_new) == (3, True)
    assert bob.settings.dialog_clock.zone == "Europe/Berlin"


def test_an_invalid_value_in_an_account_is_one_line(tmp_path: Path) -> None:
    env = _file(
        tmp_path,
        """
[accounts.erin]
IMAP_USERNAME = "erin@example.com"
IMAP_MCP_SEND_MAX_RECIPIENTS = 0
""",
    )
    with pytest.raises(ConfigError) as caught:
        load_accounts(env)
    assert str(caught.value).splitlines() == [
        f"IMAP_MCP_ACCOUNTS_FILE {env['IMAP_MCP_ACCOUNTS_FILE']}: [accounts.erin] IMAP_MCP_SEND_MAX_RECIPIENTS='0' "
        "is not valid: use a whole number from 1 to 100."
    ]
