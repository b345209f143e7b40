"""SMTP settings from the environment: defaults from the IMAP ones, and the same clear-error rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from imap_mcp.server.config import load_settings
from imap_mcp.server.setting_values import ConfigError, Secret

IMAP = {
    "IMAP_HOST": "imap.example.com",
    "IMAP_USERNAME": "alice@example.com",
    "IMAP_PASSWORD": "imap-secret-9",
}


def test_without_smtp_host_there_are_no_smtp_settings() -> None:
    assert load_settings(IMAP).smtp is None


def test_login_and_sender_default_to_the_imap_account() -> None:
    smtp = load_settings({**IMAP, "SMTP_HOST": "smtp.example.com"}).smtp
    assert smtp is not None
    assert (smtp.host, smtp.port, smtp.tls) == ("smtp.example.com", 465, "implicit")
    assert smtp.username == "alice@example.com"
    assert smtp.password == Secret("imap-secret-9")
    assert smtp.sender == "alice@example.com"


@pytest.mark.parametrize(("tls", "port"), [("implicit", 465), ("starttls", 587)])
def test_the_default_port_follows_the_tls_mode(tls: str, port: int) -> None:
    smtp = load_settings({**IMAP, "SMTP_HOST": "smtp.example.com", "SMTP_TLS": tls}).smtp
    assert smtp is not None and smtp.port == port


def test_explicit_smtp_settings_win(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    env = {
        **IMAP,
        "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": "2525",
        "SMTP_TLS": "none",
        "SMTP_USERNAME": "alice-smtp",
        "SMTP_PASSWORD": "smtp-secret-3",
        "SMTP_FROM": "Alice Example <alice@example.com>",
        "SMTP_CA_FILE": str(ca),
        "SMTP_TIMEOUT": "5",
    }
    smtp = load_settings(env).smtp
    assert smtp is not None
    assert (smtp.port, smtp.tls, smtp.username, smtp.sender) == (2525, "none", "alice-smtp", env["SMTP_FROM"])
    assert smtp.password == Secret("smtp-secret-3")
    assert (smtp.ca_file, smtp.timeout) == (ca, 5.0)
    assert "smtp-secret-3" not in repr(smtp)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"SMTP_TLS": "ssl"}, "SMTP_TLS='ssl' is not valid: use one of implicit, starttls, none."),
        ({"SMTP_TLS": "none"}, "SMTP_TLS='none' is not valid for SMTP_HOST='smtp.example.com'"),
        ({"SMTP_PORT": "0"}, "SMTP_PORT='0' is not valid: use a port number from 1 to 65535."),
        ({"SMTP_CA_FILE": "/nonexistent/ca.pem"}, "SMTP_CA_FILE='/nonexistent/ca.pem' is not valid"),
        ({"SMTP_TIMEOUT": "-1"}, "SMTP_TIMEOUT='-1' is not valid"),
        ({"SMTP_FROM": "alice"}, "SMTP_FROM is not valid as the sender"),
        ({"SMTP_FROM": "a@example.com, b@example.com"}, "SMTP_FROM is not valid as the sender"),
        ({"SMTP_FROM": "alice@example.com\r\nBcc: eve@evil.example"}, "SMTP_FROM is not valid as the sender"),
    ],
)
def test_an_invalid_smtp_setting_names_the_variable_and_what_is_valid(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("?", r"\?")) as raised:
        load_settings({**IMAP, "SMTP_HOST": "smtp.example.com", **extra})
    assert raised.value.exit_code == 2


def test_a_login_name_that_is_not_an_address_needs_smtp_from() -> None:
    with pytest.raises(ConfigError, match="SMTP_FROM is not set and IMAP_USERNAME='alice' is not an email address"):
        load_settings({**IMAP, "IMAP_USERNAME": "alice", "SMTP_HOST": "smtp.example.com"})


def test_no_smtp_error_shows_a_password() -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({**IMAP, "SMTP_HOST": "smtp.example.com", "SMTP_PASSWORD": "smtp-secret-3", "SMTP_TLS": "x"})
    assert "secret" not in str(raised.value)


def test_the_cli_exits_2_with_one_line_for_a_bad_smtp_setting(capsys: pytest.CaptureFixture[str]) -> None:
    from imap_mcp.server.serving.startup import load_or_exit

    with pytest.raises(SystemExit) as exited:
        load_or_exit(load_settings, {**IMAP, "SMTP_HOST": "smtp.example.com", "SMTP_PORT": "smtp"})
    assert exited.value.code == 2
    assert capsys.readouterr().err == "imap-mcp: SMTP_PORT='smtp' is not valid: use a port number from 1 to 65535.\n"
