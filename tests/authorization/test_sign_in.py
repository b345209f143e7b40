"""The whole flow with real parts: a client that knows only the server's URL discovers the authorization server,
registers, signs a person in, and reads that person's mailbox, and not another's.

The authorization server is npm's `oidc-provider`, started by the test on loopback (`oidc_sign_in`): dynamic
client registration, the authorization code grant with PKCE, resource indicators (RFC 8707), JWT access tokens.
The client is the Python SDK's (`OAuthClientProvider`), in both protocol eras; the person's browser is an HTTP
client that fills in oidc-provider's development login page (`oidc_sign_in.Browser`); the TypeScript SDK's client
is in `test_ts_sign_in.py`. The server is `imap-mcp serve` with an accounts file mapping each person's subject
to their mailbox (`oidc_sign_in.served_for_alice_and_bob`).
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oidc_sign_in import REDIRECT_URI, Browser, served_for_alice_and_bob
from pydantic import AnyUrl

from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


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
    with served_for_alice_and_bob(dovecot, tmp_path) as (url, alice, bob):
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
