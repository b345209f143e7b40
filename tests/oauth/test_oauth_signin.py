"""`imap-mcp auth` end to end: both sign-in flows against the tests' authorization server write a working token file."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from harness import Account
from oauth_provider import CLIENT_ID, AuthorizationServer

from imap_mcp.server.config import load_settings
from imap_mcp.server.imap.connection import close, connect

pytestmark = pytest.mark.slow


def _auth(provider: AuthorizationServer, token_file: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    environment = {"PATH": "/usr/bin:/bin", "IMAP_OAUTH_CLIENT_ID": CLIENT_ID, **env}
    return subprocess.Popen(
        [sys.executable, "-m", "imap_mcp.server", "auth", provider.token_url, "--token-file", str(token_file), *args],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _logs_in(oauth_account: Account, provider: AuthorizationServer, token_file: Path) -> None:
    env = oauth_account.env(**provider.env(), IMAP_OAUTH_TOKEN_FILE=str(token_file))
    del env["IMAP_PASSWORD"]
    close(connect(load_settings(env).imap))


def _finish(process: subprocess.Popen[str], shown: str) -> str:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return shown + out + err


def _assert_saved(token_file: Path, output: str, provider: AuthorizationServer) -> None:
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    saved = json.loads(token_file.read_text())
    assert saved["refresh_token"] and saved["token_url"] == provider.token_url and saved["client_id"] == CLIENT_ID
    assert f"Saved the refresh token to {token_file}" in output
    assert provider.leaked(output) == []


def test_the_device_flow_shows_a_code_and_saves_a_working_token_file(
    provider: AuthorizationServer, oauth_account: Account, tmp_path: Path
) -> None:
    token_file = tmp_path / "auth" / "token.json"
    process = _auth(provider, token_file, IMAP_OAUTH_DEVICE_URL=provider.device_url)
    assert process.stdout is not None
    shown = process.stdout.readline()
    found = re.fullmatch(r"To sign in, open (\S+) and enter the code (\w+)\n", shown)
    assert found and found.group(1) == f"{provider.base}/device/verify", shown
    provider.approve_device(found.group(2), oauth_account.username)  # the person enters the code
    output = _finish(process, shown)
    _assert_saved(token_file, output, provider)
    _logs_in(oauth_account, provider, token_file)


def test_the_browser_flow_with_pkce_saves_a_working_token_file(
    provider: AuthorizationServer, oauth_account: Account, tmp_path: Path
) -> None:
    provider.browser_user = oauth_account.username
    token_file = tmp_path / "token.json"
    process = _auth(provider, token_file, "--flow", "browser", IMAP_OAUTH_AUTH_URL=provider.auth_url)
    assert process.stdout is not None
    shown = process.stdout.readline() + process.stdout.readline()
    address = shown.splitlines()[1]
    assert address.startswith(f"{provider.auth_url}?") and "code_challenge_method=S256" in address
    assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in address
    with urllib.request.urlopen(address, timeout=30) as page:  # the browser follows the redirect back
        assert page.read() == b"Signed in: you can close this tab."
    output = _finish(process, shown)
    _assert_saved(token_file, output, provider)
    _logs_in(oauth_account, provider, token_file)


def test_a_refused_device_sign_in_says_so_and_saves_nothing(provider: AuthorizationServer, tmp_path: Path) -> None:
    token_file = tmp_path / "token.json"
    process = _auth(provider, token_file, IMAP_OAUTH_DEVICE_URL=provider.device_url, IMAP_OAUTH_CLIENT_ID="unknown")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1 and out == ""
    assert err == f"imap-mcp: The OAuth provider at {provider.base[7:]} refused the request (invalid_client).\n"
    assert not token_file.exists()


def test_a_missing_endpoint_is_one_line_and_exit_2(provider: AuthorizationServer, tmp_path: Path) -> None:
    process = _auth(provider, tmp_path / "token.json", "--flow", "device")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2 and out == ""
    assert err.startswith("imap-mcp: IMAP_OAUTH_DEVICE_URL is not set:") and err.count("\n") == 1
