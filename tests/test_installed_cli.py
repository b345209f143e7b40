"""The installed `imap-mcp` as a new user meets it (issue #28): quick help, every problem at once, webhooks that
say what they do. Runs the wheel `test_installed` builds and installs in a fresh venv (one build per test run).

Speed is not asserted here (see bench/cli_start.py); what makes `--version` and `--help` quick is: they import
neither the SDK nor pydantic nor imapclient, which `python -X importtime` shows for the installed command.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from test_installed import Installed, installed_venv

pytestmark = [pytest.mark.xdist_group("installed"), pytest.mark.slow]

#: what a command must not import before it runs: the SDK and what it stands on, and the IMAP library
HEAVY = ("mcp", "mcp_types", "pydantic", "pydantic_core", "imapclient", "starlette", "uvicorn", "httpx", "psycopg")
HELP_COMMANDS = [
    ["--version"],
    ["--help"],
    *([command, "--help"] for command in ("stdio", "serve", "check", "auth", "demo", "webhook", "watch")),
    *(["webhook", action, "--help"] for action in ("set", "show", "clear")),
]
#: an account that needs no server: these commands never connect to it
MAILBOX = {"IMAP_HOST": "imap.example.com", "IMAP_USERNAME": "newcomer@example.com", "IMAP_PASSWORD": "pw-never-shown"}
STORE_KEY = "k" * 43


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The venv `test_installed` builds (once per run, whichever module asks first)."""
    return installed_venv(tmp_path_factory)


def clean_env(**settings: str) -> dict[str, str]:
    """The test process's environment without any IMAP_* or SMTP_* setting, plus `settings`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_", "ELICITATION"))}
    return {**base, **settings}


def imported_modules(wheel: Installed, args: list[str]) -> set[str]:
    """The top-level packages the installed command imports to answer `args` (`-X importtime` lists each)."""
    done = subprocess.run(
        [wheel.python, "-X", "importtime", wheel.command, *args],
        env=wheel.env(clean_env()),
        cwd=wheel.cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.M)
    assert "imap_mcp.server.cli" in names
    return {name.split(".")[0] for name in names}


@pytest.mark.parametrize("args", HELP_COMMANDS, ids=" ".join)
def test_version_and_every_help_import_no_sdk(wheel: Installed, args: list[str]) -> None:
    assert not imported_modules(wheel, args) & set(HEAVY)


def help_text(wheel: Installed, *command: str) -> str:
    done = wheel.run(clean_env(), *command, "--help")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("args", [args[:-1] for args in HELP_COMMANDS[1:]], ids=lambda args: " ".join(args) or "-")
def test_every_command_has_a_description_and_no_empty_default(wheel: Installed, args: list[str]) -> None:
    text = help_text(wheel, *args)
    blocks = text.split("\n\n")[1:]  # after the usage: the description's paragraphs, then the sections
    sections = ("positional arguments:", "options:")
    description = " ".join(next(iter([blocks[:i] for i, b in enumerate(blocks) if b.startswith(sections)]), []))
    assert len(description.split()) >= 8, text
    assert "(default: None)" not in text and "(default: False)" not in text


def flat(text: str) -> str:
    return " ".join(text.split())


def test_help_names_the_settings_each_command_reads(wheel: Installed) -> None:
    expected = {
        ("stdio",): ["IMAP_HOST", "IMAP_USERNAME", "IMAP_PASSWORD", "SMTP_HOST", "ELICITATION", "IMAP_MCP_SEAL_KEYS"],
        ("serve",): ["IMAP_HOST", "IMAP_MCP_AUTH_TOKENS", "IMAP_MCP_ALLOWED_HOSTS", "IMAP_MCP_LEGACY_HTTP"],
        ("check",): ["IMAP_HOST", "IMAP_CA_FILE", "SMTP_HOST"],
        ("auth",): ["IMAP_OAUTH_CLIENT_ID", "IMAP_OAUTH_TOKEN_FILE"],
        ("webhook", "set"): ["IMAP_MCP_STORE", "IMAP_MCP_STORE_KEYS", "XDG_STATE_HOME", "imap-mcp watch"],
        ("webhook", "show"): ["IMAP_MCP_STORE", "IMAP_MCP_STORE_KEYS", "IMAP_MCP_WEBHOOKS"],
        ("webhook", "clear"): ["IMAP_MCP_STORE", "IMAP_MCP_STORE_KEYS"],
        ("watch",): ["IMAP_HOST", "IMAP_MCP_STORE", "IMAP_MCP_STORE_KEYS", "IMAP_MCP_WEBHOOK_RETRY_INTERVAL"],
    }
    for command, names in expected.items():
        text = flat(help_text(wheel, *command))
        for name in names:
            assert name in text, (command, name)


def test_help_says_check_first_only_where_it_helps_and_how_watchers_share_only_on_watch(wheel: Installed) -> None:
    for command in (("check",), ("auth",)):
        assert "imap-mcp check` first" not in flat(help_text(wheel, *command)), command
    for command in (("stdio",), ("serve",)):
        assert "imap-mcp check` first" in flat(help_text(wheel, *command)), command
    for action in ("set", "show", "clear"):
        assert "share the accounts" not in flat(help_text(wheel, "webhook", action))
    assert "they share the accounts, each about its share, by a lease per account" in flat(help_text(wheel, "watch"))
    assert "exit code is 2" in flat(help_text(wheel))


def test_with_nothing_set_one_run_names_every_missing_setting(wheel: Installed) -> None:
    done = wheel.run(clean_env(), "stdio")
    assert done.returncode == 2
    assert [line.split(" is not set", 1)[0] for line in done.stderr.splitlines()] == [
        "imap-mcp: IMAP_HOST",
        "imap-mcp: IMAP_PASSWORD",
        "imap-mcp: IMAP_USERNAME",
    ]


def test_every_bad_setting_has_the_one_exit_code_and_a_misspelling_its_did_you_mean(wheel: Installed) -> None:
    env = clean_env(IMAP_HOST="imap.example.com", IMAP_USERNAME="me", IMAP_PASWORD="pw", ELICITATION="yes")
    done = wheel.run(env, "check")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "imap-mcp: ELICITATION='yes' is not valid: use true or false.",
        "imap-mcp: IMAP_PASSWORD is not set: give the password of the mailbox (or set IMAP_AUTH=oauth2).",
        "imap-mcp: IMAP_PASWORD is set, but it is not a setting: did you mean IMAP_PASSWORD?",
    ]


def test_webhook_set_prints_the_next_steps_and_show_says_no_watcher_runs(
    wheel: Installed,
    tmp_path: Path,
) -> None:
    store = tmp_path / "state" / "store.sqlite3"
    env = clean_env(**MAILBOX, IMAP_MCP_STORE=f"sqlite:///{store}", IMAP_MCP_STORE_KEYS=STORE_KEY)
    done = wheel.run(env, "webhook", "set", "--url", "https://hooks.example.net/new-mail")
    assert done.returncode == 0, done.stderr
    printed = flat(done.stdout)
    assert "start `imap-mcp watch`" in printed and "none is running for this account" in printed
    assert f"IMAP_MCP_STORE (here: the SQLite file {store})" in printed and "IMAP_MCP_STORE_KEYS" in printed
    assert done.stdout.splitlines()[-1].startswith("whsec_")  # the secret stays the last line
    shown = wheel.run({**env, "IMAP_TIMOUT": "60"}, "webhook", "show")
    assert shown.stderr == "imap-mcp: IMAP_TIMOUT is set, but it is not a setting: did you mean IMAP_TIMEOUT?\n"
    status = json.loads(shown.stdout)
    assert (status["state"], status["watcher_running"], status["last_heard_at"]) == ("no_watcher", False, None)
    assert "imap-mcp watch" in status["message"]


def test_webhook_show_without_a_usable_state_folder_names_the_setting(wheel: Installed, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = wheel.run(clean_env(**MAILBOX, XDG_STATE_HOME=str(blocker / "state")), "webhook", "show")
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("imap-mcp: Cannot create the SQLite store at") and "Set IMAP_MCP_STORE to" in line
    assert "Traceback" not in done.stderr and done.stdout == ""
