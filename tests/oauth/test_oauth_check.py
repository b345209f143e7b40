"""`imap-mcp check` with IMAP_AUTH=oauth2: the SASL mechanism and the identity it logged in with, and never a token."""

from __future__ import annotations

import pytest
from harness import Account, logins_logged, run_cli, seeded_account
from oauth_provider import AuthorizationServer
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = pytest.mark.slow


def check(env: dict[str, str], provider: AuthorizationServer) -> tuple[int, list[str]]:
    done = run_cli(env, "check")
    assert "Traceback" not in done.stderr, done.stderr
    assert provider.leaked(done.stdout + done.stderr) == []
    return done.returncode, done.stdout.splitlines()


def line_of(lines: list[str], step: str) -> str:
    return next(line for line in lines if line.split()[1:3] == step.split())


def test_check_says_which_mechanism_and_identity_logged_in(
    oauth_env: dict[str, str], oauth_account: Account, oauth_dovecot: Dovecot, provider: AuthorizationServer
) -> None:
    code, lines = check(oauth_env, provider)
    assert code == 0, lines
    login = line_of(lines, "IMAP login")
    assert login.startswith("ok")
    assert f"OAuth 2.0 with SASL XOAUTH2 as {oauth_account.username!r}" in login
    assert f"client 'imap-mcp-tests' from {provider.token_url}" in login
    assert logins_logged(oauth_dovecot, oauth_account.username, "XOAUTH2") == 1


def test_check_with_oauthbearer_only_shows_the_fallback(
    oauthbearer_dovecot: Dovecot, provider: AuthorizationServer
) -> None:
    account = seeded_account(oauthbearer_dovecot)
    env = account.env(**provider.env(), IMAP_OAUTH_REFRESH_TOKEN=provider.sign_in(account.username))
    del env["IMAP_PASSWORD"]
    code, lines = check(env, provider)  # IMAP_OAUTH_MECHANISM=auto
    assert code == 0, lines
    assert f"OAuth 2.0 with SASL OAUTHBEARER as {account.username!r}" in line_of(lines, "IMAP login")


def test_check_shows_the_smtp_mechanism_and_identity(
    oauth_env: dict[str, str], oauth_account: Account, provider: AuthorizationServer
) -> None:
    with CaptureSMTP(oauth=provider.token_is_active, oauth_mechanisms=("OAUTHBEARER",)) as smtp:
        code, lines = check({**oauth_env, **smtp.env(), "SMTP_FROM": SENDER}, provider)
        assert smtp.messages == []
    assert code == 0, lines
    auth = line_of(lines, "SMTP AUTH")
    assert auth.startswith("ok") and f"OAuth 2.0 with SASL OAUTHBEARER as {oauth_account.username!r}" in auth
    assert smtp.oauth_logins == [("OAUTHBEARER", oauth_account.username)]


def test_check_with_a_revoked_refresh_token_fails_at_login_saying_sign_in_again(
    oauth_env: dict[str, str], oauth_account: Account, provider: AuthorizationServer
) -> None:
    provider.revoke(oauth_account.username)
    code, lines = check(oauth_env, provider)
    assert code == 1
    failed = [line for line in lines if line.startswith("fail")]
    assert len(failed) == 1 and failed[0].split()[1:3] == ["IMAP", "login"]
    assert "sign in again with imap-mcp auth" in failed[0]


def test_check_with_a_token_of_another_account_names_imap_username(
    oauth_env: dict[str, str], provider: AuthorizationServer
) -> None:
    code, lines = check({**oauth_env, "IMAP_USERNAME": "t-someone-else"}, provider)
    assert code == 1
    failed = next(line for line in lines if line.startswith("fail"))
    assert "IMAP login" in failed and "refused the OAuth login (XOAUTH2)" in failed and "IMAP_USERNAME" in failed
