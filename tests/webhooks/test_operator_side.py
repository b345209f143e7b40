"""The operator side: `imap-mcp webhook set/show/clear`, settings, schema, key ring, the pause rule."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Account, accounts_env, new_account
from watching import Operator, operating
from webhook_helpers import ACCOUNT, add_events, new_key

from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.setting_values import ConfigError, Secret
from imap_mcp.server.store.database import MIGRATIONS, Store
from imap_mcp.server.webhooks.cipher import StoreCipher, Unreadable
from imap_mcp.server.webhooks.delivery import record_failure, record_success
from imap_mcp.server.webhooks.rows import load_row, save_endpoint
from imap_mcp.server.webhooks.settings import WebhookSettings, load_webhook_settings

URL = "https://hooks.example.net/secret-path-2b7?sig=query-secret"


@pytest.fixture
def operator(empty_account: Account, tmp_path: Path) -> Iterator[Operator]:
    with operating(empty_account, f"sqlite:///{tmp_path / 'store.sqlite3'}", tmp_path) as running:
        yield running


@pytest.mark.slow
def test_set_prints_the_secret_once_and_show_never_shows_it(operator: Operator) -> None:
    done = operator.run("webhook", "set", "--url", URL, "--auth-header", "Authorization: Bearer hv-77c1")
    assert done.returncode == 0, done.stderr
    secret = done.stdout.strip().splitlines()[-1]
    assert secret.startswith("whsec_") and URL not in done.stdout and "hv-77c1" not in done.stdout
    shown = operator.run("webhook", "show")
    status = json.loads(shown.stdout)
    assert status["state"] == "no_watcher" and status["url_host"] == "hooks.example.net"
    assert status == operator.status().model_dump(mode="json")
    for value in (secret, "secret-path-2b7", "query-secret", "hv-77c1", "Authorization"):
        assert value not in shown.stdout + shown.stderr + done.stderr


@pytest.mark.slow
def test_set_again_makes_a_new_secret(operator: Operator) -> None:
    assert operator.set_webhook(URL) != operator.set_webhook(URL)


@pytest.mark.slow
def test_set_after_off_skips_events_queued_while_off(operator: Operator) -> None:
    operator.set_webhook(URL)
    webhook = operator.webhook()
    add_events(webhook.store, webhook.settings, 2, time.time(), account=webhook.account)
    webhook.set_enabled(False)
    add_events(webhook.store, webhook.settings, 3, time.time(), account=webhook.account)
    operator.set_webhook(URL)
    assert operator.status().pending_events == 2


@pytest.mark.slow
def test_clear_removes_the_webhook(operator: Operator) -> None:
    operator.set_webhook(URL)
    assert "cleared" in operator.run("webhook", "clear").stdout
    assert operator.status().state == "not_configured"
    assert "No webhook was saved" in operator.run("webhook", "clear").stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--url", "ftp://example.net/x"], "--url is not valid"),
        (["--url", "https:///nohost"], "no host"),
        (["--url", URL, "--auth-header", "no colon here"], "--auth-header must look like"),
    ],
)
def test_set_refuses_a_bad_url_or_header(operator: Operator, args: list[str], named: str) -> None:
    done = operator.run("webhook", "set", *args)
    assert done.returncode == 2 and named in done.stderr
    assert operator.status().state == "not_configured"


@pytest.mark.slow
def test_set_without_store_keys_is_refused(operator: Operator) -> None:
    done = operator.run("webhook", "set", "--url", URL, IMAP_MCP_STORE_KEYS="")
    assert done.returncode == 2 and "IMAP_MCP_STORE_KEYS is not set" in done.stderr


@pytest.mark.slow
def test_a_rotated_out_key_leaves_the_row_unreadable_until_set_again(operator: Operator) -> None:
    operator.set_webhook(URL)
    operator.keys = new_key()
    assert operator.status().state == "unreadable"
    operator.set_webhook(URL)
    assert operator.status().state == "no_watcher"  # readable again; no watcher runs here


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"IMAP_MCP_WEBHOOKS": "no"}, "IMAP_MCP_WEBHOOKS"),
        ({"IMAP_MCP_STORE": "mysql://x"}, "IMAP_MCP_STORE"),
        ({"IMAP_MCP_STORE_KEYS": "short"}, "IMAP_MCP_STORE_KEYS key 1 is too short"),
        ({"IMAP_MCP_WEBHOOK_RETENTION": "soon"}, "IMAP_MCP_WEBHOOK_RETENTION"),
        ({"IMAP_MCP_WEBHOOK_RETENTION": "40d"}, "IMAP_MCP_WEBHOOK_RETENTION_CEILING"),
        ({"IMAP_MCP_WEBHOOK_RETENTION_CEILING": "30m"}, "at least 1h"),
        ({"IMAP_MCP_WEBHOOK_MAX_EVENTS": "0"}, "IMAP_MCP_WEBHOOK_MAX_EVENTS"),
        ({"IMAP_MCP_WEBHOOK_MAX_EVENTS": "20", "IMAP_MCP_WEBHOOK_MAX_EVENTS_CEILING": "10"}, "MAX_EVENTS_CEILING (10)"),
        ({"IMAP_MCP_WEBHOOK_RETRY_INTERVAL": "0"}, "IMAP_MCP_WEBHOOK_RETRY_INTERVAL"),
    ],
)
def test_invalid_operator_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
        load_webhook_settings(env)


def test_operator_settings_take_durations_and_counts(tmp_path: Path) -> None:
    settings = load_webhook_settings(
        {
            "IMAP_MCP_STORE": f"sqlite:///{tmp_path}/s.sqlite3",
            "IMAP_MCP_WEBHOOK_RETENTION": "36h",
            "IMAP_MCP_WEBHOOK_RETENTION_CEILING": "90d",
            "IMAP_MCP_WEBHOOK_MAX_EVENTS": "50",
            "IMAP_MCP_WEBHOOK_MAX_EVENTS_CEILING": "500",
            "IMAP_MCP_WEBHOOK_RETRY_INTERVAL": "10m",
            "IMAP_MCP_WEBHOOKS": "false",
        }
    )
    assert (settings.retention_default, settings.retention_ceiling) == (36 * 3600, 90 * 86400)
    assert (settings.max_events_default, settings.max_events_ceiling) == (50, 500)
    assert settings.retry_interval == 600 and settings.enabled is False


def test_the_default_store_is_sqlite_under_the_state_directory(tmp_path: Path) -> None:
    settings = load_webhook_settings({"XDG_STATE_HOME": str(tmp_path)})
    assert settings.store_url == f"sqlite:///{tmp_path}/imap-mcp/store.sqlite3"


def test_the_schema_is_migrated_once_to_the_latest_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/nested/store.sqlite3"
    assert Store(url).schema_version() == len(MIGRATIONS)
    assert Store(url).schema_version() == len(MIGRATIONS)  # opening again applies nothing twice


def test_secrets_are_encrypted_at_rest_and_bound_to_their_account(tmp_path: Path) -> None:
    key = new_key()
    store = Store(f"sqlite:///{tmp_path}/store.sqlite3")
    cipher = StoreCipher([key])
    with store.transaction() as tx:
        secret = save_endpoint(tx, cipher, ACCOUNT, URL, ("Authorization", "Bearer hv-12"))
    raw = b"".join(path.read_bytes() for path in tmp_path.glob("store.sqlite3*"))
    for value in (URL.encode(), b"secret-path-2b7", b"hv-12", secret.encode()):
        assert value not in raw
    with store.transaction() as tx:
        row = load_row(tx, ACCOUNT)
    assert row is not None
    assert cipher.decrypt(row.url_sealed, ACCOUNT, "url") == URL
    with pytest.raises(Unreadable):
        cipher.decrypt(row.url_sealed, "mallory@127.0.0.1", "url")
    with pytest.raises(Unreadable):
        cipher.decrypt(row.url_sealed, ACCOUNT, "secret")


def test_delivery_pauses_at_the_tenth_failure_in_a_row_and_a_success_clears_it(tmp_path: Path) -> None:
    settings = WebhookSettings(
        store_url=f"sqlite:///{tmp_path}/store.sqlite3", store_keys=(Secret(new_key()),), retry_interval=300
    )
    store = Store(settings.store_url)
    with store.transaction() as tx:
        save_endpoint(tx, StoreCipher([settings.store_keys[0].reveal()]), ACCOUNT, URL, None)
    now = time.time()
    waits = []
    for failure in range(1, 11):
        record_failure(store, settings, ACCOUNT, "HTTP 503", now)
        with store.transaction() as tx:
            row = load_row(tx, ACCOUNT)
        assert row is not None and row.consecutive_failures == failure
        assert row.paused == (failure == 10)
        waits.append(round(row.next_retry_at - now))  # type: ignore[operator]
    assert waits == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]  # backoff up to the retry interval, then the pause
    record_success(store, ACCOUNT, 1, now)
    with store.transaction() as tx:
        row = load_row(tx, ACCOUNT)
    assert row is not None and not row.paused and row.consecutive_failures == 0 and row.delivered_sequence == 1


@pytest.mark.slow
def test_with_an_accounts_file_each_command_names_its_account(dovecot: Dovecot, tmp_path: Path) -> None:
    """`--account NAME` picks the account of IMAP_MCP_ACCOUNTS_FILE; each account has its own webhook."""
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = {
        **accounts_env(tmp_path, alice, bob),
        "IMAP_MCP_STORE": f"sqlite:///{tmp_path / 'store.sqlite3'}",
        "IMAP_MCP_STORE_KEYS": new_key(),
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "imap_mcp.server", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)

    assert run("webhook", "set", "--account", "bob", "--url", URL).returncode == 0
    assert json.loads(run("webhook", "show", "--account", "bob").stdout)["state"] == "no_watcher"
    assert json.loads(run("webhook", "show", "--account", "alice").stdout)["state"] == "not_configured"
    unnamed = run("webhook", "show")
    assert unnamed.returncode == 2 and "--account" in unnamed.stderr and "alice" in unnamed.stderr
