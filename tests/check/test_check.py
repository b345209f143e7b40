"""`imap-mcp check` against real parts: the test Dovecot, aiosmtpd, closed ports, a silent listener.

Every step has its line, always and in order: a failed one is marked, those after it say "not tried",
and the line names the setting to fix (never "try again" where trying again cannot help).
"""

from __future__ import annotations

import re
import ssl
from pathlib import Path

import pytest
from check_output import SECRET, SENDING, Output, run_check
from harness import Account, error_text, new_account, run_cli, start_dovecot
from keyword_dropping import KeywordDroppingServer
from mcp import Client
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.config import load_settings
from imap_mcp.server.demo.dovecot import Dovecot, free_port
from imap_mcp.server.serving.app import build_server

#: the IMAP steps, in the order each TLS mode tries them
IMAP_STEPS = {
    "implicit": ["IMAP DNS", "IMAP TCP", "IMAP TLS", "IMAP greeting", "IMAP login"],
    "starttls": ["IMAP DNS", "IMAP TCP", "IMAP greeting", "IMAP TLS", "IMAP login"],
}
AFTER_LOGIN = ["IMAP capabilities", "IMAP mailboxes", "IMAP keywords"]


def not_pem(account: Account, tmp_path: Path) -> str:
    """A CA file that holds no PEM certificate: the right certificate in DER form (what many exports give)."""
    path = tmp_path / "ca.der"
    path.write_bytes(ssl.PEM_cert_to_DER_cert(account.server.cert_file.read_text()))
    return str(path)


def assert_every_step_shown(output: Output, planned: list[str]) -> None:
    """Every planned step has its line in order: ok up to the failed one, "not tried" after it."""
    assert output.step_names[: len(planned)] == planned, output.text
    failed_at = output.step_names.index(output.failed.name)
    assert all(line.outcome in ("ok", "warn") for line in output.steps[:failed_at]), output.text
    after = output.steps[failed_at + 1 : len(planned)]
    assert all(line.outcome == "skip" and f"not tried: {output.failed.name} failed" in line.detail for line in after)


@pytest.mark.slow
@pytest.mark.parametrize("tls", ["implicit", "starttls"])
def test_the_working_settings_are_ready_with_every_step_ok_and_every_tool_working(account: Account, tls: str) -> None:
    output = run_check(account.env(tls))  # type: ignore[arg-type]
    assert output.code == 0, output.text
    assert output.step_names == IMAP_STEPS[tls] + AFTER_LOGIN
    assert all(line.outcome == "ok" for line in output.steps), output.text
    assert ("STARTTLS" if tls == "starttls" else "implicit TLS") in output.step("IMAP TLS").detail
    assert output.step("IMAP capabilities").detail == "SPECIAL-USE SORT ESEARCH CONDSTORE QRESYNC MOVE UIDPLUS IDLE"
    mailboxes = "Trash = 'Trash', Drafts = 'Drafts', Sent = 'Sent', Archive = 'Archive', Junk = 'Junk'"
    assert output.step("IMAP mailboxes").detail == mailboxes
    assert "INBOX keeps new keywords" in output.step("IMAP keywords").detail
    assert {name for name, verdict in output.verdicts.items() if verdict != "works"} == set(SENDING)
    assert all(output.verdicts[name] == "off" for name in SENDING)
    assert output.last.startswith("imap-mcp check: ready")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "step", "names"),
    [
        ({"IMAP_PASSWORD": SECRET}, "IMAP login", ("IMAP_USERNAME", "IMAP_PASSWORD")),
        ({"IMAP_HOST": "no-such-host.invalid"}, "IMAP DNS", ("IMAP_HOST",)),
        ({"IMAP_CA_FILE": ""}, "IMAP TLS", ("IMAP_CA_FILE", "not trusted")),
        ({"IMAP_PORT": "closed"}, "IMAP TCP", ("IMAP_PORT", "refused the connection")),
    ],
    ids=["wrong-password", "unknown-host", "untrusted-certificate", "closed-port"],
)
@pytest.mark.slow
def test_a_failing_step_exits_1_naming_the_setting_with_every_step_shown(
    account: Account, change: dict[str, str], step: str, names: tuple[str, ...]
) -> None:
    if change.get("IMAP_PORT") == "closed":
        change = {"IMAP_PORT": str(free_port())}
    output = run_check(account.env(**change))
    assert output.code == 1
    assert output.failed.name == step
    for name in names:
        assert name in output.failed.detail
    assert_every_step_shown(output, IMAP_STEPS["implicit"] + AFTER_LOGIN)
    assert [(line.name, line.outcome) for line in output.tools] == [("tools", "skip")]
    assert "try again" not in output.text.lower()
    assert output.last.startswith("imap-mcp check: not ready")


@pytest.mark.slow
def test_a_closed_port_keeps_the_dns_line(account: Account) -> None:
    """The steps before a failed one keep their lines (a wrong port once printed no DNS line)."""
    output = run_check(account.env(IMAP_PORT=str(free_port())))
    assert [(line.name, line.outcome) for line in output.steps[:2]] == [("IMAP DNS", "ok"), ("IMAP TCP", "fail")]
    assert output.step("IMAP DNS").detail == "127.0.0.1 is 127.0.0.1"


@pytest.mark.slow
def test_implicit_tls_against_a_plain_port_names_imap_tls(account: Account) -> None:
    output = run_check(account.env("implicit", IMAP_PORT=str(account.dovecot.port)))
    assert output.code == 1
    assert output.failed.name == "IMAP TLS"
    assert "does not speak implicit TLS" in output.failed.detail and "IMAP_TLS=starttls" in output.failed.detail
    assert_every_step_shown(output, IMAP_STEPS["implicit"] + AFTER_LOGIN)


@pytest.mark.parametrize("tls", ["starttls", "none"])
@pytest.mark.slow
def test_plain_text_against_the_implicit_tls_port_names_imap_tls(account: Account, tls: str) -> None:
    """The reverse mistake is named as well: the port waits for a TLS handshake, so it is an implicit-TLS port."""
    output = run_check(account.env(tls, IMAP_PORT=str(account.dovecot.tls_port), IMAP_TIMEOUT="0.5"))  # type: ignore[arg-type]
    assert output.code == 1
    assert output.failed.name == "IMAP greeting"
    assert "waits for a TLS handshake" in output.failed.detail and "IMAP_TLS=implicit" in output.failed.detail
    assert_every_step_shown(output, IMAP_STEPS["starttls"] + AFTER_LOGIN)


@pytest.mark.slow
def test_smtp_starttls_against_the_implicit_tls_port_names_smtp_tls(account: Account) -> None:
    with CaptureSMTP(auth=(account.username, account.password), implicit_tls=True) as smtp:
        env = account.env(**{**smtp.env(), "SMTP_TLS": "starttls", "SMTP_TIMEOUT": "0.5"}, SMTP_FROM=SENDER)
        output = run_check(env)
    assert output.code == 1
    assert output.failed.name == "SMTP greeting" and "SMTP_TLS=implicit" in output.failed.detail
    smtp_steps = [line for line in output.steps if line.name.startswith("SMTP")]
    assert [line.name for line in smtp_steps] == ["SMTP DNS", "SMTP TCP", "SMTP greeting", "SMTP TLS", "SMTP AUTH"]
    assert [line.outcome for line in smtp_steps] == ["ok", "ok", "fail", "skip", "skip"]


@pytest.mark.parametrize("tls", ["implicit", "starttls"])
@pytest.mark.slow
def test_a_server_that_never_answers_names_imap_timeout(account: Account, silent_port: int, tls: str) -> None:
    output = run_check(account.env(tls, IMAP_PORT=str(silent_port), IMAP_TIMEOUT="0.5"))  # type: ignore[arg-type]
    assert output.code == 1
    waited_for = "the TLS handshake" if tls == "implicit" else "the IMAP greeting"
    assert f"within IMAP_TIMEOUT=0.5 s while waiting for {waited_for}" in output.failed.detail
    if tls == "starttls":  # a port that says nothing at all may be one either way: IMAP_TLS is named too
        assert "IMAP_TLS" in output.failed.detail
    assert_every_step_shown(output, IMAP_STEPS[tls] + AFTER_LOGIN)


@pytest.mark.anyio
async def test_a_tool_call_against_a_silent_server_names_imap_timeout(account: Account, silent_port: int) -> None:
    settings = load_settings(account.env(IMAP_PORT=str(silent_port), IMAP_TIMEOUT="0.5"))
    async with Client(build_server(settings), mode="2026-07-28") as client:
        said = error_text(await client.call_tool("list_mailboxes", {}))
    # whichever stops it first, the socket timeout (connect) or the operation's deadline (pool): IMAP_TIMEOUT, 0.5 s
    assert re.search(r"within IMAP_TIMEOUT[ =(]+0\.5 s", said), said
    assert "_ssl.c" not in said and "timed out" not in said


@pytest.mark.parametrize("tls", ["implicit", "starttls"])
@pytest.mark.slow
def test_a_ca_file_that_is_not_pem_is_named_as_such(account: Account, tmp_path: Path, tls: str) -> None:
    output = run_check(account.env(tls, IMAP_CA_FILE=not_pem(account, tmp_path)))  # type: ignore[arg-type]
    assert output.code == 1
    assert output.failed.name == "IMAP TLS"
    assert "IMAP_CA_FILE=" in output.failed.detail and "must be a PEM file" in output.failed.detail
    assert "try again" not in output.text.lower()
    assert_every_step_shown(output, IMAP_STEPS[tls] + AFTER_LOGIN)


@pytest.mark.slow
def test_an_smtp_ca_file_that_is_not_pem_is_named_as_such(account: Account, tmp_path: Path) -> None:
    with CaptureSMTP(auth=(account.username, account.password), implicit_tls=True) as smtp:
        output = run_check(account.env(**{**smtp.env(), "SMTP_CA_FILE": not_pem(account, tmp_path)}, SMTP_FROM=SENDER))
    assert output.code == 1
    assert output.failed.name == "SMTP TLS" and "SMTP_CA_FILE=" in output.failed.detail
    assert "must be a PEM file" in output.failed.detail and "try again" not in output.text.lower()
    assert all(line.outcome == "ok" for line in output.steps if line.name.startswith("IMAP"))


@pytest.mark.slow
def test_missing_capabilities_are_warnings_and_the_tools_say_what_changes() -> None:
    dovecot: Dovecot = start_dovecot(hide_move=True)
    try:
        output = run_check(new_account(dovecot).env())
    finally:
        dovecot.stop()
    assert output.code == 0, output.text
    warning = output.step("IMAP capabilities")
    assert warning.outcome == "warn"
    assert "offered: SPECIAL-USE SORT ESEARCH CONDSTORE QRESYNC IDLE; missing: MOVE UIDPLUS" in warning.detail
    move = next(line for line in output.tools if line.name == "move_messages (mode: move)")
    assert move.outcome == "refused" and "without MOVE or UIDPLUS: nothing could take" in move.detail
    permanent = next(line for line in output.tools if line.name == "delete_messages (permanent: true)")
    assert permanent.outcome == "refused" and "without UIDPLUS" in permanent.detail
    copy = next(line for line in output.tools if line.name == "move_messages (mode: copy)")
    assert copy.outcome == "degrades" and "no COPYUID" in copy.detail


@pytest.mark.slow
def test_the_write_test_finds_keywords_a_server_claims_to_keep_and_does_not(account: Account) -> None:
    """Only the write test can tell: PERMANENTFLAGS says \\*, every STORE is answered OK, and nothing is kept."""
    with KeywordDroppingServer(account.dovecot.port, claim_keywords=True) as server:
        env = account.env("none", IMAP_PORT=str(server.port))
        announced = run_check(env)
        proven = run_check(env, "--write-test")
    for use in ("list_new_messages", "set_message_flags (keywords)"):
        assert announced.verdicts[use] == "works"
        assert proven.verdicts[use] == "fails", proven.text
    assert "was answered OK and not kept" in next(
        line.detail for line in proven.tools if line.name == "list_new_messages"
    )
    assert proven.step("IMAP STORE").outcome == "warn" and proven.step("IMAP last look").outcome == "warn"
    assert proven.step("IMAP clean-up").outcome == "ok"
    others = {use: verdict for use, verdict in proven.verdicts.items() if verdict == "fails"}
    assert set(others) == {"list_new_messages", "set_message_flags (keywords)"}


@pytest.mark.slow
def test_the_write_test_confirms_keywords_a_server_says_it_does_not_keep(account: Account) -> None:
    with KeywordDroppingServer(account.dovecot.port) as server:
        proven = run_check(account.env("none", IMAP_PORT=str(server.port)), "--write-test")
    assert proven.code == 0, proven.text
    assert proven.step("IMAP keywords").outcome == "warn"
    assert proven.verdicts["set_message_flags (keywords)"] == proven.verdicts["list_new_messages"] == "refused"
    assert proven.step("IMAP last look").outcome == "skip" and proven.step("IMAP MOVE").outcome == "ok"
    assert "proven: refused as announced" in next(
        line.detail for line in proven.tools if line.name == "list_new_messages"
    )


@pytest.mark.slow
def test_smtp_with_starttls_and_auth_is_checked_and_nothing_is_sent(account: Account) -> None:
    with CaptureSMTP(auth=(account.username, account.password), starttls=True) as smtp:
        output = run_check(account.env(**smtp.env(), SMTP_FROM=SENDER))
        assert smtp.messages == []
    assert output.code == 0, output.text
    smtp_lines = [line for line in output.steps if line.name.startswith("SMTP")]
    assert [line.name for line in smtp_lines] == ["SMTP DNS", "SMTP TCP", "SMTP greeting", "SMTP TLS", "SMTP AUTH"]
    assert all(line.outcome == "ok" for line in smtp_lines)
    assert "STARTTLS" in smtp_lines[3].detail and "SMTP_CA_FILE" in smtp_lines[3].detail
    assert f"login as {account.username!r} accepted" in smtp_lines[4].detail
    assert all(output.verdicts[name] == "works" for name in SENDING)


@pytest.mark.slow
def test_smtp_with_implicit_tls_is_checked(account: Account) -> None:
    with CaptureSMTP(auth=(account.username, account.password), implicit_tls=True) as smtp:
        output = run_check(account.env(**smtp.env(), SMTP_FROM=SENDER))
    assert output.code == 0, output.text
    assert output.step("SMTP TLS").outcome == "ok" and "implicit TLS" in output.step("SMTP TLS").detail


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "step", "names"),
    [
        ("wrong-password", "SMTP AUTH", ("SMTP_USERNAME", "SMTP_PASSWORD")),
        ("untrusted-certificate", "SMTP TLS", ("SMTP_CA_FILE", "not trusted")),
        ("closed-port", "SMTP TCP", ("SMTP_PORT",)),
    ],
)
@pytest.mark.slow
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
        output = run_check(env)
        assert smtp.messages == []
    assert output.code == 1
    assert output.failed.name == step
    for name in names:
        assert name in output.failed.detail
    assert all(line.outcome == "ok" for line in output.steps if line.name.startswith("IMAP"))
    assert all(output.verdicts[name] == "skip" for name in SENDING)  # not tried: the SMTP step failed
    assert "try again" not in output.text.lower()


@pytest.mark.slow
def test_a_bad_setting_exits_2_before_any_connection(account: Account) -> None:
    done = run_cli(account.env(IMAP_TLS="ssl"), "check")
    assert done.returncode == 2 and "IMAP_TLS" in done.stderr and done.stdout == ""
