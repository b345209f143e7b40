"""MCP authorization, the resource server's side, in this process: OAuth access tokens (JWTs) checked against an
authorization server's key set served on loopback by the test (`issuer`), the protected resource metadata, and
every kind of bad token refused with 401 before anything runs.

The app is the one `imap-mcp serve` runs for the environment's account (`accounts_http_app`), with
`IMAP_MCP_OAUTH_ISSUER` and `IMAP_MCP_OAUTH_AUDIENCE`; its mailbox is a real Dovecot user. "Nothing ran" is shown
on the mailbox: each refused call asks to create a mailbox, which is then not there.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from harness import Account
from in_process import call, serving_app, structured
from issuer import RESOURCE, Issuer, serving_issuer

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.serving.accounts import accounts_http_app

pytestmark = pytest.mark.anyio

STATIC_TOKEN = "static-token-0123456789abcdef"
METADATA_URL = "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())


def alg_none(issuer: Issuer) -> str:
    return _unsigned({"alg": "none", "typ": "JWT", "kid": issuer.current}, issuer.claims()) + "."


def hs256_with_the_public_key(issuer: Issuer) -> str:
    """Signed with HMAC, the published public key (PEM) as its secret: the classic key-confusion forgery."""
    public = issuer.keys[issuer.current].public_key()
    secret = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    signing_input = _unsigned({"alg": "HS256", "typ": "JWT", "kid": issuer.current}, issuer.claims())
    return signing_input + "." + _b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())


def tampered(issuer: Issuer) -> str:
    """A good token whose claims were changed afterwards (another subject), its signature kept."""
    header, _, signature = issuer.token().split(".")
    return f"{header}.{_b64(json.dumps(issuer.claims(sub='bob')).encode())}.{signature}"


def foreign_key(issuer: Issuer) -> str:
    """Signed by a key the authorization server never published, under the id of one it did."""
    stranger = Issuer()
    stranger.rotate()
    return jwt_with_kid(stranger.token(), issuer.current)


def jwt_with_kid(token: str, kid: str) -> str:
    header, payload, signature = token.split(".")
    decoded = json.loads(base64.urlsafe_b64decode(header + "=="))
    return f"{_b64(json.dumps({**decoded, 'kid': kid}).encode())}.{payload}.{signature}"


BAD_TOKENS: dict[str, Callable[[Issuer], str]] = {
    "expired": lambda issuer: issuer.token(exp=int(time.time()) - 3600),
    "not yet valid": lambda issuer: issuer.token(nbf=int(time.time()) + 3600),
    "wrong audience": lambda issuer: issuer.token(aud="https://other.example.com/mcp"),
    "wrong issuer": lambda issuer: issuer.token(iss="https://other-issuer.example.com"),
    "no subject": lambda issuer: issuer.token(sub=None),
    "alg none": alg_none,
    "HS256 with the public key": hs256_with_the_public_key,
    "tampered": tampered,
    "signed by another key": foreign_key,
    "not a JWT": lambda issuer: "not-a-jwt-0123456789abcdef",
}


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with serving_issuer() as served:
        yield served


def oauth_env(account: Account, issuer: Issuer, **extra: str) -> dict[str, str]:
    return account.env(IMAP_MCP_OAUTH_ISSUER=issuer.url, IMAP_MCP_OAUTH_AUDIENCE=RESOURCE, **extra)


def serving(env: dict[str, str]) -> Any:
    return serving_app(accounts_http_app(load_accounts(env), env))


async def create_mailbox(client: httpx.AsyncClient, token: str, name: str) -> httpx.Response:
    return await call(client, token, "manage_mailbox", {"action": "create", "mailbox": name})


def mailbox_exists(account: Account, name: str) -> bool:
    connection = account.imap()
    try:
        return bool(connection.folder_exists(name))
    finally:
        connection.logout()


@pytest.mark.parametrize("kind", list(BAD_TOKENS))
async def test_a_bad_token_is_refused_with_401_and_nothing_runs(account: Account, issuer: Issuer, kind: str) -> None:
    name = f"Refused-{uuid.uuid4().hex[:8]}"
    async with serving(oauth_env(account, issuer)) as client:
        refused = await create_mailbox(client, BAD_TOKENS[kind](issuer), name)
    assert refused.status_code == 401, refused.text
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge
    assert f'resource_metadata="{METADATA_URL}"' in challenge
    assert not mailbox_exists(account, name)


async def test_a_good_token_runs_the_call_and_static_tokens_still_work(account: Account, issuer: Issuer) -> None:
    names = [f"Allowed-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    async with serving(oauth_env(account, issuer, IMAP_MCP_AUTH_TOKENS=STATIC_TOKEN)) as client:
        by_oauth = structured(await create_mailbox(client, issuer.token(), names[0]))
        by_static = structured(await create_mailbox(client, STATIC_TOKEN, names[1]))
    assert by_oauth["status"] == by_static["status"] == "done"
    assert all(mailbox_exists(account, name) for name in names)


async def test_without_a_token_the_challenge_names_the_metadata_and_no_error(account: Account, issuer: Issuer) -> None:
    async with serving(oauth_env(account, issuer)) as client:
        missing = await call(client, "", "get_server_info")
        path_inserted = await client.get("/.well-known/oauth-protected-resource/mcp")
        root = await client.get("/.well-known/oauth-protected-resource")
    assert missing.status_code == 401
    challenge = missing.headers["www-authenticate"]
    assert "error=" not in challenge
    assert f'resource_metadata="{METADATA_URL}"' in challenge
    assert 'scope="mail.read mail.change mail.send mail.webhooks"' in challenge
    for answer in (path_inserted, root):
        assert answer.status_code == 200
        document = answer.json()
        assert document["resource"] == RESOURCE
        assert document["authorization_servers"] == [issuer.url]  # exactly: a client compares it with the issuer
        assert document["scopes_supported"] == ["mail.read", "mail.change", "mail.send", "mail.webhooks"]
        assert document["bearer_methods_supported"] == ["header"]


async def test_rotated_keys_are_followed_and_unknown_key_ids_fetch_at_most_once(
    account: Account, issuer: Issuer
) -> None:
    async with serving(oauth_env(account, issuer)) as client:
        first = await call(client, issuer.token(), "get_server_info")
        issuer.rotate()  # the old key leaves the key set; a new one signs from now on
        fetches = issuer.jwks_fetches
        after_rotation = await call(client, issuer.token(), "get_server_info")
        refetched = issuer.jwks_fetches - fetches
        forged = [jwt_with_kid(issuer.token(), f"made-up-{n}") for n in range(5)]
        made_up = [await call(client, token, "get_server_info") for token in forged]
    assert first.status_code == 200 and after_rotation.status_code == 200
    assert refetched == 1
    assert [answer.status_code for answer in made_up] == [401] * 5
    assert issuer.jwks_fetches - fetches == 1  # within REFETCH_INTERVAL of that fetch, made-up key ids fetch nothing
