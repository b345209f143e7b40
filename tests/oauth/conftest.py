"""Fixtures of the OAuth tests: one authorization server and one OAuth-validating Dovecot per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Account, seeded_account, start_dovecot
from oauth_provider import AuthorizationServer

from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.oauth.token_file import write_fields


@pytest.fixture(scope="session")
def session_provider() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as provider:
        yield provider


@pytest.fixture(scope="session")
def oauth_dovecot(session_provider: AuthorizationServer) -> Iterator[Dovecot]:
    """A Dovecot whose XOAUTH2 and OAUTHBEARER logins it checks by introspection at `session_provider`."""
    instance = start_dovecot(oauth2_introspection_url=session_provider.introspection_url)
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture(scope="session")
def oauthbearer_dovecot(session_provider: AuthorizationServer) -> Iterator[Dovecot]:
    """Like `oauth_dovecot`, but offering OAUTHBEARER only (no AUTH=XOAUTH2): the later auth_mechanisms wins."""
    instance = start_dovecot(
        oauth2_introspection_url=session_provider.introspection_url,
        extra_config=["auth_mechanisms = plain login oauthbearer"],
    )
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def provider(session_provider: AuthorizationServer) -> Iterator[AuthorizationServer]:
    """The session's authorization server, with this test's changes (rotation, lifetime, outage) undone after."""
    yield session_provider
    session_provider.rotate, session_provider.expires_in, session_provider.fail_with = False, 3600, None
    session_provider.release_refreshes.set()


@pytest.fixture
def oauth_account(oauth_dovecot: Dovecot) -> Account:
    """A fresh account with the sample mail on the OAuth-validating Dovecot."""
    return seeded_account(oauth_dovecot)


@pytest.fixture
def token_file(oauth_account: Account, provider: AuthorizationServer, tmp_path: Path) -> Path:
    """A token file (0600) holding a refresh token for `oauth_account`, as `imap-mcp auth` writes it."""
    path = tmp_path / "token.json"
    write_fields(path, {"refresh_token": provider.sign_in(oauth_account.username)})
    return path


@pytest.fixture
def oauth_env(oauth_account: Account, provider: AuthorizationServer, token_file: Path) -> dict[str, str]:
    """The environment of an imap-mcp that signs in to `oauth_account` with OAuth (no IMAP_PASSWORD)."""
    env = oauth_account.env(**provider.env(), IMAP_OAUTH_TOKEN_FILE=str(token_file))
    del env["IMAP_PASSWORD"]
    return env
