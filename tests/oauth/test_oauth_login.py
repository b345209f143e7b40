"""Real SASL logins: XOAUTH2 and OAUTHBEARER against Dovecot's oauth2 passdb, XOAUTH2 against aiosmtpd."""

from __future__ import annotations

import datetime as dt
import time
from email.headerregistry import Address
from pathlib import Path

import pytest
from harness import Account, logins_logged, seeded_account
from imapclient import IMAPClient
from oauth_provider import AuthorizationServer
from smtp_capture import CaptureSMTP

from imap_mcp.server.config import ImapSettings, SmtpSettings, load_settings
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap.connection import MailboxUnavailable, close, connect
from imap_mcp.server.oauth.sasl import MechanismMissing, choose_mechanism
from imap_mcp.server.outgoing.compose import Draft, build_message, parse_recipients
from imap_mcp.server.outgoing.smtp import SendFailed, send


def _imap(env: dict[str, str], **extra: str) -> ImapSettings:
    return load_settings({**env, **extra}).imap


@pytest.mark.parametrize("mechanism", ["xoauth2", "oauthbearer"])
def test_dovecot_checks_each_mechanism_at_the_provider(
    mechanism: str, oauth_env: dict[str, str], oauth_account: Account, oauth_dovecot: Dovecot
) -> None:
    client = connect(_imap(oauth_env, IMAP_OAUTH_MECHANISM=mechanism))
    try:
        assert "INBOX" in [name for _flags, _sep, name in client.list_folders()]
    finally:
        close(client)
    assert logins_logged(oauth_dovecot, oauth_account.username, mechanism.upper()) == 1


@pytest.mark.parametrize(
    ("setting", "offered", "chosen"),
    [
        ("auto", {"PLAIN", "XOAUTH2", "OAUTHBEARER"}, "XOAUTH2"),
        ("auto", {"PLAIN", "OAUTHBEARER"}, "OAUTHBEARER"),
        ("oauthbearer", {"XOAUTH2", "OAUTHBEARER"}, "OAUTHBEARER"),
        ("xoauth2", {"XOAUTH2"}, "XOAUTH2"),
    ],
)
def test_auto_prefers_xoauth2_and_falls_back_to_oauthbearer(setting: str, offered: set[str], chosen: str) -> None:
    assert choose_mechanism(setting, offered, "imap.example.com:993") == chosen  # type: ignore[arg-type]


def test_a_server_without_the_mechanism_is_a_clear_error() -> None:
    with pytest.raises(MechanismMissing) as missing:
        choose_mechanism("xoauth2", {"PLAIN", "LOGIN"}, "imap.example.com:993")
    assert "does not offer SASL XOAUTH2 (it offers LOGIN, PLAIN)" in str(missing.value)
    assert "IMAP_OAUTH_MECHANISM" in str(missing.value)


def test_an_expired_token_is_refreshed_once_and_the_login_goes_through(
    oauth_env: dict[str, str], provider: AuthorizationServer
) -> None:
    settings = _imap(oauth_env)
    close(connect(settings))
    before, checked = provider.refreshes, provider.introspections
    provider.expire_access_tokens()  # the cached token ran out at the provider
    close(connect(settings))
    assert provider.refreshes == before + 1
    assert provider.introspections == checked + 2, "one refused login, one with the new token"


def test_a_short_lived_token_is_refreshed_before_it_expires(
    oauth_env: dict[str, str], provider: AuthorizationServer
) -> None:
    provider.expires_in = 2  # used for 1 s (half its lifetime), then replaced
    settings = _imap(oauth_env)
    close(connect(settings))
    before, checked = provider.refreshes, provider.introspections
    time.sleep(1.2)
    close(connect(settings))
    assert provider.refreshes == before + 1
    assert provider.introspections == checked + 1, "the new token was used at once: no login was refused"


def test_a_token_of_another_account_is_refused_after_one_retry(
    oauth_env: dict[str, str], provider: AuthorizationServer
) -> None:
    before, checked = provider.refreshes, provider.introspections
    with pytest.raises(MailboxUnavailable) as refused:
        connect(_imap(oauth_env, IMAP_USERNAME="t-someone-else"))
    message = str(refused.value)
    assert "refused the OAuth login (XOAUTH2) for 't-someone-else' even with a new access token" in message
    assert "IMAP_USERNAME" in message
    assert provider.refreshes == before + 2 and provider.introspections == checked + 2
    assert provider.leaked(message) == []


def test_a_revoked_refresh_token_says_sign_in_again_and_stops_trying(
    oauth_env: dict[str, str], provider: AuthorizationServer, oauth_account: Account, token_file: Path
) -> None:
    settings = _imap(oauth_env)
    close(connect(settings))
    provider.revoke(oauth_account.username)
    provider.expire_access_tokens()
    requests, checked = provider.token_requests, provider.introspections
    for _ in range(3):
        with pytest.raises(MailboxUnavailable) as refused:
            connect(settings)
        assert "refused the refresh token" in str(refused.value)
        assert "sign in again with imap-mcp auth" in str(refused.value)
        assert provider.leaked(str(refused.value)) == []
    assert provider.token_requests == requests + 1, "the refused refresh token is not sent again"
    assert provider.introspections == checked + 1, "one login with the expired token, then none"


# --- SMTP: XOAUTH2 against aiosmtpd, checked against the same tokens ---


def _smtp(env: dict[str, str], smtp: CaptureSMTP) -> SmtpSettings:
    settings = load_settings({**env, **smtp.env(), "SMTP_FROM": "Demo <demo@example.org>"}).smtp
    assert settings is not None and settings.auth == "oauth2"
    return settings


def _send(settings: SmtpSettings) -> dict[str, str]:
    draft = Draft(
        sender=Address("Demo", addr_spec="demo@example.org"),
        recipients=parse_recipients(["alice@example.com"], [], []),
        subject="Hello",
        body="Hi\n",
    )
    message = build_message(draft, "<m.imap-mcp@example.org>", dt.datetime.now(dt.UTC))
    return send(settings, message, ["alice@example.com"])


def test_smtp_sends_with_xoauth2_and_refreshes_a_rejected_token(
    oauth_env: dict[str, str], oauth_account: Account, provider: AuthorizationServer
) -> None:
    with CaptureSMTP(oauth=provider.token_is_active) as smtp:
        settings = _smtp(oauth_env, smtp)
        assert _send(settings) == {}
        before = provider.refreshes
        provider.expire_access_tokens()
        assert _send(settings) == {}
    assert [e.authenticated for e in smtp.envelopes] == [True, True]
    assert smtp.oauth_attempts == 3, "ok, refused, ok with the refreshed token"
    assert provider.refreshes == before + 1


def test_imap_and_smtp_share_one_token(oauth_env: dict[str, str], provider: AuthorizationServer) -> None:
    with CaptureSMTP(oauth=provider.token_is_active) as smtp:
        settings = load_settings({**oauth_env, **smtp.env(), "SMTP_FROM": "demo@example.org"})
        before = provider.refreshes
        close(connect(settings.imap))
        assert settings.smtp is not None
        _send(settings.smtp)
    assert provider.refreshes == before + 1


def test_smtp_with_a_revoked_refresh_token_sends_nothing_and_says_sign_in_again(
    oauth_env: dict[str, str], oauth_account: Account, provider: AuthorizationServer
) -> None:
    provider.revoke(oauth_account.username)
    with CaptureSMTP(oauth=provider.token_is_active) as smtp, pytest.raises(SendFailed) as refused:
        _send(_smtp(oauth_env, smtp))
    assert "sign in again with imap-mcp auth" in str(refused.value) and "Nothing was sent" in str(refused.value)
    assert smtp.messages == [] and smtp.oauth_attempts == 0


@pytest.mark.parametrize("mechanism", ["xoauth2", "oauthbearer"])
def test_smtp_sends_with_each_mechanism_checked_at_the_provider(
    mechanism: str, oauth_env: dict[str, str], oauth_account: Account, provider: AuthorizationServer
) -> None:
    with CaptureSMTP(oauth=provider.token_is_active) as smtp:
        assert _send(_smtp({**oauth_env, "IMAP_OAUTH_MECHANISM": mechanism}, smtp)) == {}
    assert smtp.oauth_logins == [(mechanism.upper(), oauth_account.username)]
    assert [e.authenticated for e in smtp.envelopes] == [True]


def test_smtp_oauthbearer_ends_a_refused_attempt_and_retries_with_a_refreshed_token(
    oauth_env: dict[str, str], oauth_account: Account, provider: AuthorizationServer
) -> None:
    with CaptureSMTP(oauth=provider.token_is_active) as smtp:
        settings = _smtp({**oauth_env, "IMAP_OAUTH_MECHANISM": "oauthbearer"}, smtp)
        assert _send(settings) == {}
        before = provider.refreshes
        provider.expire_access_tokens()
        assert _send(settings) == {}
    assert smtp.oauth_attempts == 3, "ok, refused, ok with the refreshed token"
    assert smtp.oauth_endings == [b"\x01"], "RFC 7628: the client ends a refused attempt with a single %x01"
    assert smtp.oauth_logins == [("OAUTHBEARER", oauth_account.username)] * 2
    assert provider.refreshes == before + 1


def test_smtp_auto_falls_back_to_oauthbearer_where_xoauth2_is_not_offered(
    oauth_env: dict[str, str], oauth_account: Account, provider: AuthorizationServer
) -> None:
    with CaptureSMTP(oauth=provider.token_is_active, oauth_mechanisms=("OAUTHBEARER",)) as smtp:
        assert _send(_smtp(oauth_env, smtp)) == {}
    assert smtp.oauth_logins == [("OAUTHBEARER", oauth_account.username)]


def test_imap_auto_falls_back_to_oauthbearer_at_a_dovecot_offering_only_oauthbearer(
    oauthbearer_dovecot: Dovecot, provider: AuthorizationServer
) -> None:
    account = seeded_account(oauthbearer_dovecot)
    env = account.env(**provider.env(), IMAP_OAUTH_REFRESH_TOKEN=provider.sign_in(account.username))
    del env["IMAP_PASSWORD"]
    with IMAPClient("127.0.0.1", port=oauthbearer_dovecot.port, ssl=False) as greeted:
        offered = {c.decode() for c in greeted.capabilities()}  # before the login, as imap-mcp sees them
    assert "AUTH=OAUTHBEARER" in offered and "AUTH=XOAUTH2" not in offered
    client = connect(_imap(env))  # IMAP_OAUTH_MECHANISM=auto
    try:
        assert "INBOX" in [name for _flags, _sep, name in client.list_folders()]
    finally:
        close(client)
    assert logins_logged(oauthbearer_dovecot, account.username, "OAUTHBEARER") == 1
    # logged in order: with the OAUTHBEARER login in the log, an XOAUTH2 attempt before it would be too
    assert f"Login: user=<{account.username}>, method=XOAUTH2," not in oauthbearer_dovecot.log_file.read_text()
