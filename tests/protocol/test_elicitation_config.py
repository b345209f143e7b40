"""ELICITATION and IMAP_MCP_SEAL_KEYS at start: one honest line for each fallback (a bad value exits 2 as every
setting does: tests/test_cli.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from harness import Account, wait_for_port

from imap_mcp.server.demo.dovecot import free_port

OFF_LINE = "imap-mcp: ELICITATION=false — guarded tools fall back to the two-call token"


def start_lines(env: dict[str, str]) -> list[str]:
    """The stderr lines an HTTP server prints before it listens."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "imap_mcp.server", "serve", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, process)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=15)
    return [line for line in stderr.splitlines() if line.startswith("imap-mcp:")]


@pytest.mark.slow
def test_elicitation_false_prints_its_start_line_once(account: Account) -> None:
    lines = start_lines(account.env(ELICITATION="false", IMAP_MCP_SEAL_KEYS="s" * 40))
    assert lines.count(OFF_LINE) == 1
    assert not any("IMAP_MCP_SEAL_KEYS" in line for line in lines)


@pytest.mark.slow
def test_without_shared_keys_one_line_warns_that_replicas_will_ask_again(account: Account) -> None:
    lines = start_lines(account.env())
    warnings = [line for line in lines if "IMAP_MCP_SEAL_KEYS is not set" in line]
    assert len(warnings) == 1 and "other replicas" in warnings[0] and "ask again" in warnings[0]
    assert OFF_LINE not in lines
