"""The OAuth settings: what IMAP_AUTH=oauth2 needs, what a provider fills in, and one clear line for each mistake."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from imap_mcp.server.config import load_settings
from imap_mcp.server.oauth.token_file import write_fields
from imap_mcp.server.setting_values import ConfigError, Secret

OAUTH = {
    "IMAP_AUTH": "oauth2",
    "IMAP_USERNAME": "alice@example.com",
    "IMAP_OAUTH_PROVIDER": "google",
    "IMAP_OAUTH_CLIENT_ID": "client-1.apps.example",
    "IMAP_OAUTH_REFRESH_TOKEN": "rt-secret-Hq2",
}


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token.json"
    write_fields(path, {"refresh_token": "rt-in-file-8v"})
    return path


def test_oauth2_needs_no_password_and_google_fills_in_endpoints_and_hosts() -> None:
    settings = load_settings(OAUTH)
    imap, smtp = settings.imap, settings.smtp
    assert (imap.host, imap.port, imap.tls, imap.auth) == ("imap.gmail.com", 993, "implicit", "oauth2")
    assert imap.oauth is not None
    assert imap.oauth.token_url == "https://oauth2.googleapis.com/token"
    assert imap.oauth.scope == "https://mail.google.com/"
    assert imap.oauth.refresh_token == Secret("rt-secret-Hq2") and imap.oauth.client_secret is None
    assert smtp is not None and (smtp.host, smtp.port, smtp.tls) == ("smtp.gmail.com", 465, "implicit")
    assert smtp.auth == "oauth2"
    assert smtp.oauth is imap.oauth, "one token for IMAP and SMTP"
    assert "rt-secret-Hq2" not in repr(settings)


def test_microsoft_uses_the_tenant_and_starttls_submission(token_file: Path) -> None:
    env = {
        **OAUTH,
        "IMAP_OAUTH_PROVIDER": "microsoft",
        "IMAP_OAUTH_TENANT": "contoso.onmicrosoft.com",
        "IMAP_OAUTH_TOKEN_FILE": str(token_file),
        "IMAP_OAUTH_CLIENT_SECRET": "cs-Zy7",
    }
    settings = load_settings(env)
    oauth = settings.imap.oauth
    assert oauth is not None and settings.imap.host == "outlook.office365.com"
    assert oauth.token_url == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token"
    assert oauth.device_url == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/devicecode"
    assert "IMAP.AccessAsUser.All" in oauth.scope and "SMTP.Send" in oauth.scope and "offline_access" in oauth.scope
    assert oauth.token_file == token_file and oauth.refresh_token is None, "the file wins over the variable"
    assert settings.smtp is not None and (settings.smtp.host, settings.smtp.port) == ("smtp.office365.com", 587)
    assert settings.smtp.tls == "starttls"
    assert "cs-Zy7" not in repr(settings)


def test_explicit_hosts_and_endpoints_win() -> None:
    env = {
        **OAUTH,
        "IMAP_HOST": "127.0.0.1",
        "IMAP_TLS": "none",
        "SMTP_HOST": "smtp.example.com",
        "IMAP_OAUTH_TOKEN_URL": "http://127.0.0.1:9/token",
        "IMAP_OAUTH_SCOPE": "mail",
        "IMAP_OAUTH_MECHANISM": "oauthbearer",
    }
    settings = load_settings(env)
    assert settings.imap.host == "127.0.0.1" and settings.imap.oauth is not None
    assert (settings.imap.oauth.token_url, settings.imap.oauth.scope) == ("http://127.0.0.1:9/token", "mail")
    assert settings.imap.oauth.mechanism == "oauthbearer"
    assert settings.smtp is not None and (settings.smtp.host, settings.smtp.tls) == ("smtp.example.com", "implicit")


def test_password_mode_is_unchanged_by_oauth_settings() -> None:
    env = {"IMAP_HOST": "imap.example.com", "IMAP_USERNAME": "a", "IMAP_PASSWORD": "pw", "IMAP_OAUTH_PROVIDER": "x"}
    settings = load_settings(env)
    assert settings.imap.auth == "password" and settings.imap.oauth is None and settings.smtp is None


def test_smtp_can_use_a_password_while_imap_uses_oauth() -> None:
    smtp = load_settings({**OAUTH, "SMTP_AUTH": "password", "SMTP_PASSWORD": "smtp-pw"}).smtp
    assert smtp is not None and smtp.auth == "password" and smtp.oauth is None and smtp.password == Secret("smtp-pw")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"IMAP_AUTH": "oauth"}, "IMAP_AUTH='oauth' is not valid: use one of password, oauth2."),
        ({"IMAP_OAUTH_PROVIDER": "yahoo"}, "IMAP_OAUTH_PROVIDER='yahoo' is not valid: use google or microsoft"),
        ({"IMAP_OAUTH_PROVIDER": "", "IMAP_HOST": "imap.example.com"}, "IMAP_OAUTH_TOKEN_URL is not set: set"),
        ({"IMAP_OAUTH_TOKEN_URL": "http://auth.example.com/token"}, "IMAP_OAUTH_TOKEN_URL='http://auth.example.com/"),
        ({"IMAP_OAUTH_DEVICE_URL": "ftp://127.0.0.1/device"}, "IMAP_OAUTH_DEVICE_URL='ftp://127.0.0.1/device'"),
        ({"IMAP_OAUTH_CLIENT_ID": ""}, "IMAP_OAUTH_CLIENT_ID is not set"),
        ({"IMAP_OAUTH_REFRESH_TOKEN": ""}, "IMAP_OAUTH_TOKEN_FILE is not set"),
        ({"IMAP_OAUTH_MECHANISM": "plain"}, "IMAP_OAUTH_MECHANISM='plain' is not valid: use one of auto, xoauth2,"),
        ({"IMAP_OAUTH_CLIENT_AUTH": "jwt"}, "IMAP_OAUTH_CLIENT_AUTH='jwt' is not valid: use one of body, basic."),
        ({"SMTP_AUTH": "password"}, "SMTP_PASSWORD is not set"),
        ({"SMTP_AUTH": "cram"}, "SMTP_AUTH='cram' is not valid"),
    ],
)
def test_each_mistake_names_its_variable(change: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings({**OAUTH, **change})
    assert message in str(error.value)
    assert "rt-secret-Hq2" not in str(error.value)


def test_a_token_file_must_be_private_and_hold_a_refresh_token(tmp_path: Path, token_file: Path) -> None:
    env = {**OAUTH, "IMAP_OAUTH_TOKEN_FILE": str(token_file)}
    token_file.chmod(0o644)
    with pytest.raises(ConfigError, match="is readable by others: run chmod 600 on it"):
        load_settings(env)
    write_fields(token_file, {"access_token": "x"})
    with pytest.raises(ConfigError, match="holds no refresh_token"):
        load_settings(env)
    with pytest.raises(ConfigError, match="use a readable JSON file"):
        load_settings({**env, "IMAP_OAUTH_TOKEN_FILE": str(tmp_path / "missing.json")})


@pytest.mark.slow
def test_a_bad_oauth_setting_exits_2_with_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_"))}
    env.update(OAUTH, IMAP_OAUTH_MECHANISM="kerberos")
    done = subprocess.run(
        [sys.executable, "-m", "imap_mcp.server", "stdio"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("imap-mcp: IMAP_OAUTH_MECHANISM='kerberos' is not valid")
    assert done.stderr.count("\n") == 1
    assert "rt-secret-Hq2" not in done.stderr


@pytest.mark.slow
def test_help_offers_the_auth_command() -> None:
    done = subprocess.run([sys.executable, "-m", "imap_mcp.server", "auth", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "google|microsoft|TOKEN_URL" in done.stdout and "--flow" in done.stdout
