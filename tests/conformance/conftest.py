"""Fixtures for the conformance wrapper: the pinned harness, and a real `imap-mcp serve` with spec fixtures."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness import new_account
from imap_mcp.server.dovecot import Dovecot, free_port
from pinned_suite import Harness, installed_harness

SERVER_START_TIMEOUT_S = 30


@pytest.fixture(scope="session")
def conformance_cli() -> Harness:
    """The pinned harness, installed with `npm ci` from the committed lock file when missing."""
    return installed_harness()


def _wait_listening(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"imap-mcp serve exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            httpx.get(url, timeout=1.0)  # any HTTP status means the socket is up
            return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"imap-mcp serve did not listen within {SERVER_START_TIMEOUT_S}s:\n{log.read_text()[-4000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def fixture_server_url(dovecot: Dovecot, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`imap-mcp serve` in its default single-instance mode with spec fixtures on, for its own account.

    The URL names `localhost`, which the dns-rebinding scenario needs. The log goes to a file so a
    chatty server can never block on a full pipe.
    """
    port = free_port()
    log = tmp_path_factory.mktemp("conformance-server") / "server.log"
    env = new_account(dovecot).env(IMAP_MCP_SPEC_FIXTURES="true")
    command = [sys.executable, "-m", "imap_mcp.server", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://localhost:{port}/mcp"
    try:
        _wait_listening(url, proc, log)
        yield url
    finally:
        _stop(proc)
