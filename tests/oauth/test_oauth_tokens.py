"""The access-token source against the tests' authorization server: caching, refresh, rotation, refusals."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

import pytest
from oauth_provider import AuthorizationServer

from imap_mcp.server.oauth.errors import OAuthError, SignInRequired
from imap_mcp.server.oauth.settings import OAuthSettings, load_oauth_settings
from imap_mcp.server.oauth.token_file import write_fields
from imap_mcp.server.oauth.tokens import RETRY_AFTER_FAILURE, TokenSource

USER = "t-token-user"


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _file_settings(provider: AuthorizationServer, path: Path, **extra: str) -> OAuthSettings:
    return load_oauth_settings({**provider.env(), "IMAP_OAUTH_TOKEN_FILE": str(path), **extra})


def _token_file(provider: AuthorizationServer, tmp_path: Path, **fields: str) -> Path:
    path = tmp_path / "token.json"
    write_fields(path, {"refresh_token": provider.sign_in(USER), **fields})
    return path


def test_a_token_is_cached_until_shortly_before_it_expires(provider: AuthorizationServer, tmp_path: Path) -> None:
    provider.expires_in = 100
    clock = Clock()
    source = TokenSource(_file_settings(provider, _token_file(provider, tmp_path)), clock=clock)
    before = provider.refreshes
    first = source.access_token()
    clock.now += 49
    assert source.access_token() == first
    assert provider.refreshes == before + 1
    clock.now += 2  # 51 s of 100: within the margin (half its lifetime, at most 60 s)
    second = source.access_token()
    assert second != first and provider.refreshes == before + 2
    assert provider.token_is_active(USER, first), "refreshed before the old one expired"


def test_a_rejected_token_is_replaced_by_a_refreshed_one(provider: AuthorizationServer, tmp_path: Path) -> None:
    source = TokenSource(_file_settings(provider, _token_file(provider, tmp_path)))
    first = source.access_token()
    source.rejected("some-older-token")
    assert source.access_token() == first, "rejecting a token no longer cached changes nothing"
    source.rejected(first)
    assert source.access_token() != first


def test_rotation_rewrites_the_token_file_atomically(provider: AuthorizationServer, tmp_path: Path) -> None:
    provider.rotate = True
    path = _token_file(provider, tmp_path, client_id="kept", note="kept too")
    old = json.loads(path.read_text())["refresh_token"]
    source = TokenSource(_file_settings(provider, path))
    source.access_token()
    stored = json.loads(path.read_text())
    assert stored["refresh_token"] != old
    assert stored["client_id"] == "kept" and stored["note"] == "kept too"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["token.json"], "no temporary file left behind"
    restarted = TokenSource(_file_settings(provider, path))  # as a new process would
    assert restarted.access_token()
    assert json.loads(path.read_text())["refresh_token"] not in (old, stored["refresh_token"])


def test_rotation_without_a_token_file_keeps_the_new_refresh_token(provider: AuthorizationServer) -> None:
    provider.rotate = True
    settings = load_oauth_settings({**provider.env(), "IMAP_OAUTH_REFRESH_TOKEN": provider.sign_in(USER)})
    source = TokenSource(settings)
    first = source.access_token()
    source.rejected(first)
    assert source.access_token() != first, "the second refresh used the rotated refresh token"


def test_concurrent_callers_share_one_refresh(provider: AuthorizationServer, tmp_path: Path) -> None:
    source = TokenSource(_file_settings(provider, _token_file(provider, tmp_path)))
    before = provider.refreshes
    provider.refresh_arrived.clear()
    provider.release_refreshes.clear()
    tokens: list[str] = []
    callers = [threading.Thread(target=lambda: tokens.append(source.access_token())) for _ in range(8)]
    for caller in callers:
        caller.start()
    assert provider.refresh_arrived.wait(10)
    assert all(caller.is_alive() for caller in callers), "every caller waits while the one refresh is answered"
    provider.release_refreshes.set()
    for caller in callers:
        caller.join(10)
    assert len(tokens) == 8 and len(set(tokens)) == 1
    assert provider.refreshes == before + 1


def test_a_revoked_refresh_token_is_one_clear_error_and_is_not_sent_again(
    provider: AuthorizationServer, tmp_path: Path
) -> None:
    path = _token_file(provider, tmp_path)
    source = TokenSource(_file_settings(provider, path))
    provider.revoke(USER)
    before = provider.token_requests
    for _ in range(3):
        with pytest.raises(SignInRequired) as refused:
            source.access_token()
        assert "sign in again with imap-mcp auth" in str(refused.value)
        assert str(path) in str(refused.value)
    assert provider.token_requests == before + 1
    write_fields(path, {"refresh_token": provider.sign_in(USER)})  # the person ran imap-mcp auth again
    assert source.access_token()


def test_an_outage_of_the_token_endpoint_is_not_hammered(provider: AuthorizationServer, tmp_path: Path) -> None:
    clock = Clock()
    source = TokenSource(_file_settings(provider, _token_file(provider, tmp_path)), clock=clock)
    provider.fail_with = 503
    before = provider.token_requests
    for _ in range(3):
        with pytest.raises(OAuthError, match="answered HTTP 503"):
            source.access_token()
    assert provider.token_requests == before + 1
    provider.fail_with = None
    clock.now += RETRY_AFTER_FAILURE
    assert source.access_token()
    assert provider.token_requests == before + 2


@pytest.mark.parametrize("basic", [True, False], ids=["basic", "body"])
def test_the_client_secret_goes_where_the_provider_expects_it(basic: bool, tmp_path: Path) -> None:
    with AuthorizationServer(client_secret="s3cret-Kq", basic_auth=basic) as provider:
        path = _token_file(provider, tmp_path)
        assert TokenSource(_file_settings(provider, path)).access_token()
        other = "body" if basic else "basic"
        wrong = TokenSource(_file_settings(provider, path, IMAP_OAUTH_CLIENT_AUTH=other))
        with pytest.raises(OAuthError, match="invalid_client"):
            wrong.access_token()
