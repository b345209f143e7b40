"""Accounts are distinct identities: login, host and port name an account's webhook, outbox and records.

Issue #25: two accounts with the same login on the same host but different ports shared one
webhook (the store keyed it by `login@host`), so one's token toggled the other's, and one's mail
went to the other's receiver. Here they are the same Dovecot user on its plain and its TLS port.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from harness import Account, new_account
from webhook_helpers import new_key

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.setting_values import ConfigError
from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.cipher import StoreCipher
from imap_mcp.server.webhooks.operations import webhook_store
from imap_mcp.server.webhooks.rows import load_row, open_endpoint, save_endpoint

URL = "https://hooks.example.net/new-mail"


def two_ports_env(tmp_path: Path, account: Account, second_port: str) -> dict[str, str]:
    """One login on Dovecot's TLS port (`tls`) and on another port (`plain`), in one accounts file."""
    path = tmp_path / "accounts.toml"
    path.write_text(
        f'[accounts.tls]\nIMAP_USERNAME = "{account.username}"\n'
        f'[accounts.plain]\nIMAP_USERNAME = "{account.username}"\nIMAP_PORT = "{second_port}"\n'
        'IMAP_TLS = "none"\n'
    )
    path.chmod(0o600)
    return {
        **account.env(),
        "IMAP_MCP_ACCOUNTS_FILE": str(path),
        "IMAP_MCP_STORE": f"sqlite:///{tmp_path / 'store.sqlite3'}",
        "IMAP_MCP_STORE_KEYS": new_key(),
    }


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "imap_mcp.server", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_one_login_on_two_ports_is_two_accounts_with_a_webhook_each(dovecot: Dovecot, tmp_path: Path) -> None:
    env = two_ports_env(tmp_path, new_account(dovecot), str(dovecot.port))
    assert run(env, "webhook", "set", "--account", "tls", "--url", URL).returncode == 0
    assert json.loads(run(env, "webhook", "show", "--account", "plain").stdout)["state"] == "not_configured"
    assert json.loads(run(env, "webhook", "show", "--account", "tls").stdout)["state"] == "no_watcher"
    assert run(env, "webhook", "clear", "--account", "plain").stdout.startswith("No webhook was saved")
    assert json.loads(run(env, "webhook", "show", "--account", "tls").stdout)["state"] == "no_watcher"


def test_two_accounts_of_one_mailbox_are_refused_naming_both(dovecot: Dovecot, tmp_path: Path) -> None:
    env = two_ports_env(tmp_path, new_account(dovecot), str(dovecot.tls_port))
    with pytest.raises(ConfigError) as refused:
        load_accounts({**env, "IMAP_TLS": "implicit"})
    text = str(refused.value)
    assert "[accounts.plain]" in text and "[accounts.tls]" in text and "keep one of them" in text


def test_rows_kept_under_the_old_name_are_adopted_once_by_the_account(tmp_path: Path) -> None:
    """A store written before the port was part of an account's name keeps working after the upgrade."""
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    key = new_key()
    with Store(url).transaction() as tx:
        save_endpoint(tx, StoreCipher([key]), "me@imap.example.org", URL, None)
    store = webhook_store(url, "me@imap.example.org:993", "me@imap.example.org", (key,))
    with store.transaction() as tx:
        assert load_row(tx, "me@imap.example.org") is None
        row = load_row(tx, "me@imap.example.org:993")
    assert row is not None and row.enabled
    assert open_endpoint(row, StoreCipher([key])).url == URL  # sealed again under its new name: it opens


def test_rows_under_the_old_name_stay_where_no_key_opens_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    with Store(url).transaction() as tx:
        save_endpoint(tx, StoreCipher([new_key()]), "me@imap.example.org", URL, None)
    store = webhook_store(url, "me@imap.example.org:993", "me@imap.example.org", (new_key(),))
    with store.transaction() as tx:
        assert load_row(tx, "me@imap.example.org") is not None
        assert load_row(tx, "me@imap.example.org:993") is None
