"""The `imap-mcp` command: configuration errors, help, and the demo."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from harness import Account, ServerLog, run_cli, wait_for_port
from mcp import Client

from imap_mcp.server.demo.dovecot import free_port
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.serving.startup import check_login_in_background
from imap_mcp.server.setting_values import Secret

pytestmark = pytest.mark.anyio


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "variable", "valid"),
    [
        ({"IMAP_TLS": "ssl"}, "IMAP_TLS", "implicit, starttls, none"),
        ({"IMAP_PORT": "99999"}, "IMAP_PORT", "1 to 65535"),
        ({"IMAP_HOST": ""}, "IMAP_HOST", "host name"),
        ({"IMAP_USERNAME": ""}, "IMAP_USERNAME", "login name"),
        ({"IMAP_TLS": "none", "IMAP_HOST": "imap.example.com"}, "IMAP_TLS", "loopback"),
        ({"IMAP_CA_FILE": "/nonexistent/ca.pem"}, "IMAP_CA_FILE", "PEM file"),
        ({"IMAP_TIMEOUT": "soon"}, "IMAP_TIMEOUT", "seconds"),
        ({"IMAP_MCP_SPEC_FIXTURES": "yes"}, "IMAP_MCP_SPEC_FIXTURES", "true, false"),
        ({"IMAP_MCP_SEAL_KEYS": "k" * 40 + "," + "k" * 40}, "IMAP_MCP_SEAL_KEYS", "repeats an earlier key"),
        ({"IMAP_DOWNLOAD_DIR": "/nonexistent/downloads"}, "IMAP_DOWNLOAD_DIR", "existing directory"),
    ],
)
def test_invalid_setting_exits_2_naming_it(account: Account, change: dict[str, str], variable: str, valid: str) -> None:
    env = account.env(IMAP_PASSWORD="hunter2-secret", **change)
    done = run_cli(env, "stdio")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert variable in lines[0] and valid in lines[0]
    assert "Traceback" not in done.stderr
    assert "hunter2-secret" not in done.stderr + done.stdout


def test_a_bad_elicitation_value_exits_2_as_every_setting_does_beside_the_others(account: Account) -> None:
    done = run_cli(account.env(ELICITATION="yes", IMAP_HOST=""), "stdio")
    assert done.returncode == 2
    assert "ELICITATION='yes' is not valid: use true or false" in done.stderr
    assert "IMAP_HOST is not set" in done.stderr


@pytest.mark.slow
def test_missing_password_exits_2(account: Account) -> None:
    env = account.env()
    del env["IMAP_PASSWORD"]
    done = run_cli(env, "serve", "--port", str(free_port()))
    assert done.returncode == 2
    assert "IMAP_PASSWORD is not set" in done.stderr


@pytest.mark.slow
def test_help_names_every_command() -> None:
    done = run_cli(dict(os.environ), "--help")
    assert done.returncode == 0
    for command in ("stdio", "serve", "demo"):
        assert command in done.stdout


@pytest.mark.slow
async def test_demo_serves_the_sample_mailbox_and_ctrl_c_removes_all_it_made(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMAP_")}
    env["XDG_STATE_HOME"] = str(tmp_path)  # where the user's own store would be: the demo leaves it alone
    process = subprocess.Popen(
        [sys.executable, "-m", "imap_mcp.server", "demo", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, process, timeout=60)
        first_line = process.stdout.readline()  # type: ignore[union-attr]
        url = first_line.rsplit(" at ", 1)[1].strip()
        assert url == f"http://127.0.0.1:{port}/mcp"
        async with Client(url, mode="2026-07-28") as client:
            result = await client.call_tool("list_mailboxes", {})
        names = {m["name"]: m["role"] for m in result.structured_content["mailboxes"]}
        assert names["INBOX"] == "inbox" and names["Sent"] == "sent" and names["Archive"] == "archive"
        assert "Projects/Entwürfe" in names
        said = iter(process.stdout.readline, "")  # type: ignore[union-attr]
        folder = next(found for line in said if (found := re.findall(r"The demo keeps everything in (\S+):", line)))[0]
        assert Path(folder).is_dir()
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        _, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    assert not Path(folder).exists() and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_version_is_the_package_version() -> None:
    from importlib.metadata import version

    done = run_cli(dict(os.environ), "--version")
    assert done.returncode == 0 and done.stdout.strip() == f"imap-mcp {version('imap-mcp')}"


@pytest.mark.slow
def test_each_command_says_what_it_does_and_shows_defaults() -> None:
    stdio = run_cli(dict(os.environ), "stdio", "--help").stdout
    assert "stdin/stdout" in stdio and "IMAP_HOST" in stdio
    serve = " ".join(run_cli(dict(os.environ), "serve", "--help").stdout.split())
    assert "Streamable HTTP" in serve and "IMAP_MCP_AUTH_TOKENS" in serve
    assert "(default: 127.0.0.1)" in serve and "(default: 8000)" in serve
    check = " ".join(run_cli(dict(os.environ), "check", "--help").stdout.split())
    assert "one line per step" in check and "exit 0" in check


#: what only a command that serves MCP needs (the SDK and its web stack), and PostgreSQL's driver (only for its store)
SERVING_ONLY = {"mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette", "psycopg"}


@pytest.mark.parametrize("args", [["webhook", "show"], ["check"]], ids=" ".join)
def test_commands_that_serve_nothing_import_no_sdk(tmp_path: Path, args: list[str]) -> None:
    """An operator's `webhook` and `check` start in half a second: the SDK alone takes a second to import."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("IMAP_", "SMTP_", "ELICITATION"))}
    env.update(
        IMAP_HOST="127.0.0.1",
        IMAP_PORT=str(free_port()),  # nothing listens: `check` says so
        IMAP_TLS="none",
        IMAP_USERNAME="operator@example.org",
        IMAP_PASSWORD="pw",
        IMAP_TIMEOUT="2",
        XDG_STATE_HOME=str(tmp_path),
    )
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "imap_mcp.server", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.M)
    assert "imap_mcp.server.cli" in names, done.stderr[-2000:]
    assert not {name.split(".")[0] for name in names} & SERVING_ONLY


def test_the_login_checked_at_start_says_one_line_when_refused(
    account: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = account.settings().imap
    refused = ImapPool(dataclasses.replace(settings, password=Secret("hunter2-wrong")))
    check_login_in_background(refused).join(60)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1, said
    assert said[0].startswith("imap-mcp: the login at start failed: ") and "refused the login" in said[0]
    assert "IMAP_PASSWORD" in said[0] and "hunter2-wrong" not in said[0]


def test_a_login_checked_at_start_that_works_is_silent_and_kept_for_the_first_tool(
    account: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = ImapPool(account.settings().imap)
    check_login_in_background(pool).join(60)
    assert capsys.readouterr().err == ""
    pool.run_sync(lambda session: session.noop())
    assert pool.opened == 1  # the first tool's operation took the connection the check opened
    pool.close_all()


async def test_stdio_with_a_wrong_password_says_so_at_start(account: Account) -> None:
    """Before any tool is called: the client that started it shows its stderr, and the person sees why."""
    env = account.env(IMAP_PASSWORD="hunter2-wrong")
    with ServerLog() as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "imap_mcp.server", "stdio"], env=env, stdin=subprocess.PIPE, stderr=log.writer
        )
        try:
            line = await log.line("the login at start failed")
        finally:
            process.stdin.close()  # type: ignore[union-attr]
            process.wait(timeout=30)
    assert "refused the login" in line and "hunter2-wrong" not in "\n".join(log.lines)
