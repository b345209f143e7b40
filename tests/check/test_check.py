"""`imap-mcp check` against real parts: the test Dovecot, aiosmtpd, closed ports, a silent listener."""

from __future__ import annotations

import re

import pytest
from harness import ANY_USER_PASSWORD, Account, error_text, new_account, run_cli, start_dovecot
from mcp import Client
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.app import build_server
from imap_mcp.server.config import load_settings
from imap_mcp.server.demo.dovecot import Dovecot, free_port

SECRET = "hunter2-secret-pw"


def check(env: dict[str, str]) -> tuple[int, list[str]]:
    done = run_cli(env, "check")
    assert "Traceback" not in done.stderr, done.stderr
    assert ANY_USER_PASSWORD not in done.stdout + done.stderr
    assert SECRET not in done.stdout + done.stderr
    return done.returncode, done.stdout.splitlines()


def failed_line(lines: list[str]) -> str:
    failed = [line for line in lines if line.startswith("fail")]
    assert len(failed) == 1, lines
    return failed[0]


@pytest.mark.slow
@pytest.mark.parametrize("tls", ["implicit", "starttls"])
def test_the_working_settings_are_ready_with_every_step_ok(account: Account, tls: str) -> None:
    code, lines = check(account.env(tls))  # type: ignore[arg-type]
    assert code == 0, lines
    steps = [line.split()[1:3] for line in lines[:-1]]
    assert steps == [
        ["IMAP", "DNS"],
        ["IMAP", "TCP"],
        ["IMAP", "TLS"],
        ["IMAP", "login"],
        ["IMAP", "capabilities"],
        ["IMAP", "mailboxes"],
    ]
    assert all(line.startswith("ok ") for line in lines[:-1]), lines
    assert "STARTTLS" in lines[2] if tls == "starttls" else "implicit TLS" in lines[2]
    assert "MOVE UIDPLUS SORT SPECIAL-USE CONDSTORE" in lines[4]
    assert "Trash = 'Trash', Sent = 'Sent', Drafts = 'Drafts', Archive = 'Archive', Junk = 'Junk'" in lines[5]
    assert lines[-1].startswith("imap-mcp check: ready")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "step", "names"),
    [
        ({"IMAP_PASSWORD": SECRET}, "IMAP login", ("IMAP_USERNAME", "IMAP_PASSWORD")),
        ({"IMAP_HOST": "no-such-host.invalid"}, "IMAP DNS", ("IMAP_HOST",)),
        ({"IMAP_CA_FILE": ""}, "IMAP TLS", ("IMAP_CA_FILE", "not trusted")),
    ],
    ids=["wrong-password", "unknown-host", "untrusted-certificate"],
)
def test_a_failing_step_exits_1_naming_the_setting(
    account: Account, change: dict[str, str], step: str, names: tuple[str, ...]
) -> None:
    code, lines = check(account.env(**change))
    assert code == 1
    line = failed_line(lines)
    assert line.split()[1:3] == step.split()
    for name in names:
        assert name in line
    assert lines[-1].startswith("imap-mcp check: not ready")


@pytest.mark.slow
def test_a_closed_port_names_imap_port(account: Account) -> None:
    code, lines = check(account.env(IMAP_PORT=str(free_port())))
    assert code == 1
    line = failed_line(lines)
    assert "IMAP TCP" in line and "refused the connection" in line and "IMAP_PORT" in line


@pytest.mark.slow
def test_implicit_tls_against_a_plain_port_names_imap_tls(account: Account) -> None:
    code, lines = check(account.env("implicit", IMAP_PORT=str(account.dovecot.port)))
    assert code == 1
    line = failed_line(lines)
    assert "IMAP TLS" in line and "does not speak implicit TLS" in line and "IMAP_TLS=starttls" in line


@pytest.mark.slow
def test_a_server_that_never_answers_names_imap_timeout(account: Account, silent_port: int) -> None:
    code, lines = check(account.env(IMAP_PORT=str(silent_port), IMAP_TIMEOUT="0.5"))
    assert code == 1
    line = failed_line(lines)
    assert "IMAP TLS" in line and "within IMAP_TIMEOUT=0.5 s while waiting for the TLS handshake" in line


@pytest.mark.anyio
async def test_a_tool_call_against_a_silent_server_names_imap_timeout(account: Account, silent_port: int) -> None:
    settings = load_settings(account.env(IMAP_PORT=str(silent_port), IMAP_TIMEOUT="0.5"))
    async with Client(build_server(settings), mode="2026-07-28") as client:
        said = error_text(await client.call_tool("list_mailboxes", {}))
    # whichever stops it first, the socket timeout (connect) or the operation's deadline (pool): IMAP_TIMEOUT, 0.5 s
    assert re.search(r"within IMAP_TIMEOUT[ =(]+0\.5 s", said), said
    assert "_ssl.c" not in said and "timed out" not in said


@pytest.mark.slow
def test_starttls_against_the_implicit_tls_port_times_out_waiting_for_the_greeting(account: Account) -> None:
    code, lines = check(account.env("starttls", IMAP_PORT=str(account.dovecot.tls_port), IMAP_TIMEOUT="0.5"))
    assert code == 1
    line = failed_line(lines)
    assert "IMAP greeting" in line and "IMAP_TIMEOUT=0.5 s while waiting for the IMAP greeting" in line


@pytest.mark.slow
def test_missing_capabilities_are_warnings_saying_what_changes() -> None:
    dovecot: Dovecot = start_dovecot(hide_move=True)
    try:
        code, lines = check(new_account(dovecot).env())
    finally:
        dovecot.stop()
    assert code == 0, lines
    warning = next(line for line in lines if "IMAP capabilities" in line)
    assert warning.startswith("warn")
    assert "offered: SORT SPECIAL-USE CONDSTORE" in warning
    assert "without MOVE" in warning and "without UIDPLUS, permanent deletes are refused" in warning


@pytest.mark.slow
def test_smtp_with_starttls_and_auth_is_checked_and_nothing_is_sent(account: Account) -> None:
    with CaptureSMTP(auth=(account.username, account.password), starttls=True) as smtp:
        code, lines = check(account.env(**smtp.env(), SMTP_FROM=SENDER))
        assert smtp.messages == []
    assert code == 0, lines
    smtp_lines = [line for line in lines if line.split()[1] == "SMTP"]
    assert [line.split()[2] for line in smtp_lines] == ["DNS", "TCP", "TLS", "AUTH"]
    assert all(line.startswith("ok") for line in smtp_lines)
    assert "STARTTLS" in smtp_lines[2] and "SMTP_CA_FILE" in smtp_lines[2]
    assert f"login as {account.username!r} accepted" in smtp_lines[3]


@pytest.mark.slow
def test_smtp_with_implicit_tls_is_checked(account: Account) -> None:
    with CaptureSMTP(auth=(account.username, account.password), implicit_tls=True) as smtp:
        code, lines = check(account.env(**smtp.env(), SMTP_FROM=SENDER))
    assert code == 0, lines
    assert any(line.startswith("ok") and "SMTP TLS" in line and "implicit TLS" in line for line in lines)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "step", "names"),
    [
        ("wrong-password", "SMTP AUTH", ("SMTP_USERNAME", "SMTP_PASSWORD")),
        ("untrusted-certificate", "SMTP TLS", ("SMTP_CA_FILE", "not trusted")),
        ("closed-port", "SMTP TCP", ("SMTP_PORT",)),
    ],
)
def test_a_failing_smtp_step_exits_1_naming_the_setting(
    account: Account, fault: str, step: str, names: tuple[str, ...]
) -> None:
    with CaptureSMTP(auth=(account.username, account.password), starttls=True) as smtp:
        env = account.env(**smtp.env(), SMTP_FROM=SENDER)
        env.update(
            {
                "wrong-password": {"SMTP_PASSWORD": SECRET},
                "untrusted-certificate": {"SMTP_CA_FILE": str(account.dovecot.cert_file)},  # a CA, but not its
                "closed-port": {"SMTP_PORT": str(free_port())},
            }[fault]
        )
        code, lines = check(env)
        assert smtp.messages == []
    assert code == 1
    line = failed_line(lines)
    assert line.split()[1:3] == step.split()
    for name in names:
        assert name in line
    assert all(line.startswith("ok") for line in lines if line.split()[1] == "IMAP")


@pytest.mark.slow
def test_a_bad_setting_exits_2_before_any_connection(account: Account) -> None:
    done = run_cli(account.env(IMAP_TLS="ssl"), "check")
    assert done.returncode == 2 and "IMAP_TLS" in done.stderr and done.stdout == ""
