"""`imap-mcp serve` re-reads the accounts file without a restart (issue #32): when it changes, and on SIGHUP.

Real Dovecot users behind one server process. An added account is served at once; a removed one's
tokens are refused (401) and what was approved for it runs nowhere; a file with a problem changes
nothing and the log says why. The tests wait on the server's answers and log, never on the clock.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from harness import (
    ALICE_TOKEN,
    BOB_TOKEN,
    Account,
    accounts_env,
    append_message,
    client_as,
    error_text,
    http_server,
    inbox_uids,
    new_account,
    seeded_account,
    structured,
)
from mcp.types import InputRequiredResult
from test_accounts_serving import YES, list_tools_status, mail, never_asked, subjects_in_inbox

from imap_mcp.server.demo.dovecot import Dovecot

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CAROL_TOKEN = "carol-token-0123456789abcdef"
NEW_BOB_TOKEN = "bob-token-rotated-0123456789"


def write_accounts(path: Path, tables: dict[str, str]) -> None:
    """The accounts file with these tables (name → its lines), saved as an editor does: renamed over the old one."""
    draft = path.with_suffix(".new")
    draft.write_text("".join(f"[accounts.{name}]\n{lines}\n" for name, lines in tables.items()))
    draft.chmod(0o600)
    draft.replace(path)


def table(account: Account, token: str) -> str:
    return f'auth_tokens = ["{token}"]\nIMAP_USERNAME = "{account.username}"'


def until(what: str, done: Callable[[], bool], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s; the server's log:\n{log.read_text()[-3000:]}")


def sessions(account: Account) -> dict[str, bool]:
    """Each of the account's IMAP sessions in Dovecot's log, and whether it has logged out."""
    log = account.dovecot.log_file.read_text(errors="replace")
    logins = re.findall(rf"Login: user=<{account.username}>.*session=<([^>]+)>", log)
    ended = set(re.findall(rf"imap\({account.username}\)<\d+><([^>]+)>:.*Logged out", log))
    return {session: session in ended for session in logins}


def status_is(url: str, token: str, code: int) -> Callable[[], bool]:
    return lambda: list_tools_status(url, {"authorization": f"Bearer {token}"}) == code


async def test_an_added_account_is_served_at_once_and_a_removed_ones_token_is_refused(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    alice, bob, carol = new_account(dovecot), new_account(dovecot), new_account(dovecot)
    append_message(carol, mail("for carol only"))
    env = accounts_env(tmp_path, alice, bob)
    accounts_file, log = Path(env["IMAP_MCP_ACCOUNTS_FILE"]), tmp_path / "server.log"
    with http_server(env, log_path=log) as url:
        assert list_tools_status(url, {"authorization": f"Bearer {CAROL_TOKEN}"}) == 401
        write_accounts(
            accounts_file,
            {"alice": table(alice, ALICE_TOKEN), "bob": table(bob, BOB_TOKEN), "carol": table(carol, CAROL_TOKEN)},
        )
        until("carol served", status_is(url, CAROL_TOKEN, 200), log)
        async with client_as(url, CAROL_TOKEN) as as_carol, client_as(url, ALICE_TOKEN) as as_alice:
            seen_by_carol = await subjects_in_inbox(as_carol)
            info = structured(await as_carol.call_tool("get_server_info", {}))
            await subjects_in_inbox(as_alice)  # her pool now keeps connections (idle ones close after 2 minutes)
        # INBOX examined on one, Sent read on another (for the domains she wrote to); both open until she goes
        until("alice's two logins logged", lambda: len(sessions(alice)) == 2, log)
        assert not any(sessions(alice).values())
        write_accounts(accounts_file, {"bob": table(bob, BOB_TOKEN), "carol": table(carol, CAROL_TOKEN)})
        until("alice's token refused", status_is(url, ALICE_TOKEN, 401), log)
        until("alice's connection closed", lambda: all(sessions(alice).values()), log)
        still = [list_tools_status(url, {"authorization": f"Bearer {t}"}) for t in (BOB_TOKEN, CAROL_TOKEN)]
    assert seen_by_carol == ["for carol only"] and info["account"]["name"] == "carol"
    assert still == [200, 200]
    said = log.read_text()
    assert "accounts file reloaded (the file changed): added carol; 3 account(s)" in said
    assert "accounts file reloaded (the file changed): removed alice; 2 account(s)" in said
    for token in (ALICE_TOKEN, BOB_TOKEN, CAROL_TOKEN):
        assert token not in said


async def test_a_file_with_a_problem_changes_nothing_and_the_log_says_why(dovecot: Dovecot, tmp_path: Path) -> None:
    alice, bob = new_account(dovecot), new_account(dovecot)
    env = accounts_env(tmp_path, alice, bob)
    accounts_file, log = Path(env["IMAP_MCP_ACCOUNTS_FILE"]), tmp_path / "server.log"
    with http_server(env, log_path=log) as url:
        misspelt = table(bob, BOB_TOKEN) + '\nIMAP_PASWORD = "x"'
        write_accounts(accounts_file, {"alice": table(alice, ALICE_TOKEN), "bob": misspelt})
        until("the misspelt key reported", lambda: "did you mean IMAP_PASSWORD?" in log.read_text(), log)
        write_accounts(accounts_file, {"alice": f'IMAP_USERNAME = "{alice.username}"'})
        until("the file without a token refused", lambda: "no account has auth_tokens" in log.read_text(), log)
        served = [list_tools_status(url, {"authorization": f"Bearer {t}"}) for t in (ALICE_TOKEN, BOB_TOKEN)]
    assert served == [200, 200]  # both files were refused whole: the accounts read before stay
    said = log.read_text()
    assert said.count("not reloaded (the file changed): it has problems, so the 2 account(s) read before stay") == 2
    assert "[accounts.bob] IMAP_PASWORD is not a setting: did you mean IMAP_PASSWORD?" in said


async def test_sighup_reads_the_secret_files_again_a_rotated_token_is_served_the_old_one_refused(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    """The file names bob's token file; only that file changes, which SIGHUP makes the server read."""
    alice, bob = new_account(dovecot), new_account(dovecot)
    tokens = tmp_path / "bob-tokens"
    tokens.write_text(BOB_TOKEN + "\n")
    tokens.chmod(0o600)
    env = accounts_env(tmp_path, alice, bob)
    accounts_file, log = Path(env["IMAP_MCP_ACCOUNTS_FILE"]), tmp_path / "server.log"
    write_accounts(
        accounts_file,
        {
            "alice": table(alice, ALICE_TOKEN),
            "bob": f'auth_tokens_file = "{tokens}"\nIMAP_USERNAME = "{bob.username}"',
        },
    )
    started: list[subprocess.Popen[bytes]] = []
    with http_server(env, log_path=log, started=started) as url:
        assert list_tools_status(url, {"authorization": f"Bearer {BOB_TOKEN}"}) == 200
        tokens.write_text(NEW_BOB_TOKEN + "\n")
        started[0].send_signal(signal.SIGHUP)
        until("the rotated token served", status_is(url, NEW_BOB_TOKEN, 200), log)
        old = list_tools_status(url, {"authorization": f"Bearer {BOB_TOKEN}"})
        alive = started[0].poll() is None
    assert old == 401 and alive
    assert "accounts file reloaded (SIGHUP): changed bob; 2 account(s)" in log.read_text()


def confirm_call(url: str, token: str, args: dict[str, object]) -> httpx.Response:
    """A 2026-07-28 tools/call of delete_messages with `args` (a confirm_token among them) sent with `token`."""
    version = "2026-07-28"
    meta = {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "delete_messages", "arguments": args, "_meta": meta}
    headers = {
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": version,
        "mcp-method": "tools/call",
        "mcp-name": "delete_messages",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return httpx.post(url, headers=headers, json=body, timeout=30)


async def test_what_was_approved_for_a_removed_account_runs_nowhere(dovecot: Dovecot, tmp_path: Path) -> None:
    """Alice's confirm_token and sealed dialog state, minted before she is removed: her token is refused from then
    on; sent with bob's they run nothing; and alice added back under her name and token but on another mailbox
    (carol's) cannot use them either, since they are bound to the mailbox they were made for."""
    alice, bob, other = seeded_account(dovecot), seeded_account(dovecot), seeded_account(dovecot)
    by_token, by_dialog = ({"mailbox": "INBOX", "uids": [uid], "permanent": True} for uid in (1, 2))
    env = {**accounts_env(tmp_path, alice, bob), "IMAP_MCP_SEAL_KEYS": "k" * 40}
    accounts_file, log = Path(env["IMAP_MCP_ACCOUNTS_FILE"]), tmp_path / "server.log"
    with http_server(env, log_path=log) as url:
        async with client_as(url, ALICE_TOKEN) as as_alice:  # no dialog: the two-call token
            asked = structured(await as_alice.call_tool("delete_messages", by_token))
        async with client_as(url, ALICE_TOKEN, elicitation_callback=never_asked) as as_alice:
            question = await as_alice.session.call_tool("delete_messages", by_dialog, allow_input_required=True)
        assert isinstance(question, InputRequiredResult)
        with_token = {**by_token, "confirm_token": asked["confirm_token"]}
        state = question.request_state
        write_accounts(accounts_file, {"bob": table(bob, BOB_TOKEN)})
        until("alice's token refused", status_is(url, ALICE_TOKEN, 401), log)
        by_alice = confirm_call(url, ALICE_TOKEN, with_token).status_code
        async with client_as(url, BOB_TOKEN) as as_bob:
            on_bob = error_text(await as_bob.call_tool("delete_messages", with_token))
        async with client_as(url, BOB_TOKEN, elicitation_callback=never_asked) as as_bob:
            replayed_on_bob = await as_bob.session.call_tool(
                "delete_messages", by_dialog, allow_input_required=True, input_responses=YES, request_state=state
            )
        write_accounts(accounts_file, {"alice": table(other, ALICE_TOKEN), "bob": table(bob, BOB_TOKEN)})
        until("alice's name served again", status_is(url, ALICE_TOKEN, 200), log)
        async with client_as(url, ALICE_TOKEN) as as_new_alice:
            on_other = error_text(await as_new_alice.call_tool("delete_messages", with_token))
        async with client_as(url, ALICE_TOKEN, elicitation_callback=never_asked) as as_new_alice:
            replayed_on_other = await as_new_alice.session.call_tool(
                "delete_messages", by_dialog, allow_input_required=True, input_responses=YES, request_state=state
            )
    assert asked["status"] == "confirmation_required" and by_alice == 401
    for refused in (on_bob, on_other):
        assert "does not fit this call" in refused and "Nothing was changed" in refused
    assert isinstance(replayed_on_bob, InputRequiredResult) and isinstance(replayed_on_other, InputRequiredResult)
    for mailbox in (alice, bob, other):
        assert {1, 2} <= inbox_uids(mailbox)
