"""The whole flow with the official TypeScript MCP SDK's OAuth client (`@modelcontextprotocol/sdk`, pinned in
`ts-client/`): given only the server's URL, `ts-client/sign_in.mjs` finds the authorization server through the
server's protected resource metadata (RFC 9728), registers itself, has a person sign in, and calls get_server_info.

The TypeScript SDK's newest release when pinned (1.32.2) speaks up to 2025-11-25, not 2026-07-28: this is the
2025-11-25 era (sessions); the Python SDK's client covers both eras (`test_sign_in.py`). The authorization server,
the person's browser and the served accounts are the shared ones of `oidc_sign_in`.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from oidc_sign_in import REDIRECT_URI, Browser, beside_modules, install, node, node_env, served_for_alice_and_bob

from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TS_CLIENT = Path(__file__).parent / "ts-client"
LINE_LIMIT = 1 << 20


@dataclass
class Run:
    """What one run of the TypeScript client said: its last JSON line (empty when it failed), its exit code,
    its error output."""

    said: dict[str, Any]
    returncode: int
    stderr: str


async def ts_sign_in(url: str, login: str, tmp_path: Path) -> Run:
    """The TypeScript SDK's client given only `url`, with `login` signing in at the browser it hands over."""
    install(TS_CLIENT, "@modelcontextprotocol/sdk")
    errors = tmp_path / f"ts-client-{login}.err"
    said: dict[str, Any] = {}
    with beside_modules(TS_CLIENT, "sign_in.mjs", uuid.uuid4().hex) as script, errors.open("wb") as stderr:
        command = [str(node(TS_CLIENT)), str(script), url, REDIRECT_URI]
        async with await anyio.open_process(command, env=node_env(TS_CLIENT), stderr=stderr) as process:
            assert process.stdin is not None and process.stdout is not None
            lines = BufferedByteReceiveStream(process.stdout)
            with anyio.fail_after(120):
                with contextlib.suppress(anyio.EndOfStream, anyio.IncompleteRead):  # it ended: see stderr
                    asked = json.loads(await lines.receive_until(b"\n", LINE_LIMIT))
                    browser = Browser(login)
                    await browser.open(asked["authorize"])
                    result = await browser.callback()
                    answer = {"code": result.code, "state": result.state}
                    await process.stdin.send(json.dumps(answer).encode() + b"\n")
                    said = json.loads(await lines.receive_until(b"\n", LINE_LIMIT))
                returncode = await process.wait()
    return Run(said, returncode, errors.read_text())


async def replayed(url: str, token: str, session_id: str) -> httpx.Response:
    """get_server_info sent with `token` on the 2025-11-25 session `session_id`."""
    headers = {
        "authorization": f"Bearer {token}",
        "mcp-session-id": session_id,
        "mcp-protocol-version": "2025-11-25",
        "accept": "application/json, text/event-stream",
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_server_info", "arguments": {}}}
    async with httpx.AsyncClient(timeout=60) as http:
        return await http.post(url, json=call, headers=headers)


async def test_the_typescript_sdk_client_with_only_the_url_signs_in_and_reads_its_own_mailbox(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    with served_for_alice_and_bob(dovecot, tmp_path) as (url, alice, bob):
        runs = {login: await ts_sign_in(url, login, tmp_path) for login in ("alice-sub", "bob-sub", "carol-sub")}
        first, second = runs["alice-sub"].said, runs["bob-sub"].said
        alice_on_bobs_session = await replayed(url, first["accessToken"], second["sessionId"])
        bob_on_his_session = await replayed(url, second["accessToken"], second["sessionId"])
    assert runs["alice-sub"].returncode == 0 and runs["bob-sub"].returncode == 0, runs
    assert (first["account"], second["account"]) == (alice.username, bob.username)
    assert first["protocolVersion"] == second["protocolVersion"] == "2025-11-25"
    # bob's session is live for bob's token, and alice's token on it reaches neither it nor bob's mailbox
    assert bob_on_his_session.status_code == 200 and bob.username in bob_on_his_session.text
    refused = alice_on_bobs_session
    assert refused.status_code == 403 and "another token" in refused.text and bob.username not in refused.text
    carol = runs["carol-sub"]
    assert carol.returncode != 0 and carol.said == {}
    assert "403" in carol.stderr and "oauth_subjects" in carol.stderr, carol.stderr
