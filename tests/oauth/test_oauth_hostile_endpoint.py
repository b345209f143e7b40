"""A hostile token endpoint: it trickles, redirects elsewhere, or answers huge texts echoing the secrets.

The login is bounded by IMAP_TIMEOUT in all, no redirect is followed (the client credentials go to the
configured URL only), and what the provider says reaches a result or a log line only as a short one-line
excerpt without any secret.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import http_server
from hostile_http import HostilePeer, Listener
from mcp import Client

from imap_mcp.server.config import load_settings
from imap_mcp.server.imap.connection import MailboxUnavailable, connect
from imap_mcp.server.oauth.errors import OAuthError
from imap_mcp.server.oauth.settings import load_oauth_settings
from imap_mcp.server.oauth.tokens import TokenSource
from imap_mcp.server.outbound_http import EXCERPT_CHARS, excerpt

#: how long a test waits for what must end within seconds (a wait for the result, not a measure of speed)
GENEROUS = 60.0
CLIENT_SECRET = "cs-hostile-7Qx2v9"
REFRESH_TOKEN = "rt-hostile-Lm4k8Zp"
FORGED = "imap-mcp: webhook: forged line"


def _failure_of(action: Callable[[], object], failures: list[BaseException]) -> None:
    try:
        action()
    except Exception as exc:
        failures.append(exc)


def test_a_trickling_token_endpoint_fails_the_login_within_imap_timeout(oauth_env: dict[str, str]) -> None:
    with HostilePeer() as peer:
        peer.trickle()  # one byte a second for ever: only a deadline for the whole request ends it
        settings = load_settings({**oauth_env, "IMAP_OAUTH_TOKEN_URL": peer.url("/token"), "IMAP_TIMEOUT": "2"})
        failures: list[BaseException] = []
        login = threading.Thread(target=_failure_of, args=(lambda: connect(settings.imap), failures), daemon=True)
        login.start()
        login.join(GENEROUS)
        assert not login.is_alive(), f"the login still waited on a trickling token endpoint after {GENEROUS:g} s"
        assert len(peer.requests) == 1
    [failure] = failures
    assert isinstance(failure, MailboxUnavailable)
    assert "The OAuth provider at 127.0.0.1" in str(failure) and "IMAP_TIMEOUT=2 s" in str(failure)


@pytest.mark.parametrize(
    ("status", "scheme", "client_auth"),
    [
        (301, "http", "basic"),
        (302, "https", "basic"),
        (303, "http", "body"),
        (307, "https", "body"),
        (308, "http", "basic"),
    ],
)
def test_a_redirect_of_the_token_endpoint_is_refused_and_the_credentials_go_nowhere_else(
    status: int, scheme: str, client_auth: str
) -> None:
    with Listener() as elsewhere, HostilePeer() as peer:
        peer.redirect(status, elsewhere.url(scheme))
        settings = load_oauth_settings(
            {
                "IMAP_OAUTH_TOKEN_URL": peer.url("/token"),
                "IMAP_OAUTH_CLIENT_ID": "imap-mcp-tests",
                "IMAP_OAUTH_CLIENT_SECRET": CLIENT_SECRET,
                "IMAP_OAUTH_CLIENT_AUTH": client_auth,
                "IMAP_OAUTH_REFRESH_TOKEN": REFRESH_TOKEN,
            }
        )
        with pytest.raises(OAuthError) as refused:
            TokenSource(settings).access_token()
        assert len(peer.requests) == 1, "sent once, to the configured URL"
    message = str(refused.value)
    assert f"answered HTTP {status}, a redirect, which is not followed" in message
    assert "IMAP_OAUTH_TOKEN_URL" in message
    assert elsewhere.connections == 0, "the redirect target was never contacted"
    assert CLIENT_SECRET not in message and REFRESH_TOKEN not in message


def test_an_excerpt_is_one_line_cut_only_after_the_secrets_are_hidden() -> None:
    text = "e" * (EXCERPT_CHARS - 10) + REFRESH_TOKEN + "\n\r\x00\x85\u2028\u2029\u200b\u202e\ufeff" + "x" * 1000
    shown = excerpt(text, [REFRESH_TOKEN])
    assert shown == "e" * (EXCERPT_CHARS - 10) + "*** " + "x" * 5 + "…"  # the token straddled the cut
    assert excerpt("a\u2028b\t\x1b[2Jc", []) == "a b [2Jc"
    assert excerpt(b"rt-\xff" + REFRESH_TOKEN.encode(), [REFRESH_TOKEN]) == "rt-\ufffd***"


def _hostile_error(refresh_token: str, padding: int) -> bytes:
    """An OAuth error whose `error` forges a log line and echoes the refresh token and the client secret."""
    text = f"invalid_request\n{FORGED}\u2028{refresh_token} {CLIENT_SECRET}\r\n\x1b[2J\u202e" + "x" * padding
    return json.dumps({"error": text}).encode()


def _check_line(log_path: Path) -> str:
    """The log once `serve` has written the line of its check at start (which logs in, so asks for a token)."""
    deadline = time.monotonic() + GENEROUS
    while time.monotonic() < deadline:
        log = log_path.read_text(errors="replace")
        if "imap-mcp: check: " in log:
            return log
        time.sleep(0.1)
    raise AssertionError(f"serve logged no check line within {GENEROUS:g} s:\n{log[-2000:]}")


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("padding", [900_000, 20_000], ids=["900KB", "20KB"])
async def test_a_hostile_error_text_reaches_the_result_and_the_log_as_one_short_line_without_secrets(
    padding: int, oauth_env: dict[str, str], token_file: Path, tmp_path: Path
) -> None:
    refresh_token = json.loads(token_file.read_text())["refresh_token"]
    log_path = tmp_path / "server.log"
    with HostilePeer() as peer:
        peer.answer(400, _hostile_error(refresh_token, padding))
        env = {**oauth_env, "IMAP_OAUTH_TOKEN_URL": peer.url("/token"), "IMAP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}
        with http_server(env, log_path=log_path) as url:
            async with Client(url, mode="2026-07-28") as client:
                result = await client.call_tool("list_mailboxes", {})
            log = _check_line(log_path)
        assert peer.requests, "the token endpoint was asked"
    assert result.is_error
    text = " ".join(getattr(part, "text", "") for part in result.content)
    assert "The OAuth provider at 127.0.0.1" in text
    for shown in (text, log):
        assert refresh_token not in shown and CLIENT_SECRET not in shown
        assert "\x1b" not in shown and "\u2028" not in shown and "\u202e" not in shown
    assert "\n" not in text and "\r" not in text and len(text) < 600
    assert not any(line.startswith(FORGED) for line in log.splitlines()), "no forged log line"
    assert all(len(line) < 1000 for line in log.splitlines()), "no provider text whole in the log"
    if padding < 64 * 1024:  # within the bound, the error code is shown, cut and with the secrets hidden
        assert "refused the request (invalid_request" in text and "***" in text
