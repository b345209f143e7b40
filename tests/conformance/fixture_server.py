"""`imap-mcp serve` as a subprocess with the spec fixtures on, for the conformance and wire tests."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from imap_mcp.server.dovecot import free_port

SERVER_START_TIMEOUT_S = 30


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


@contextlib.contextmanager
def serve_with_fixtures(env: dict[str, str], log: Path) -> Iterator[str]:
    """Run `imap-mcp serve` in its default single-instance mode with `IMAP_MCP_SPEC_FIXTURES=true`.

    Yields the MCP URL, which names `localhost` (the dns-rebinding scenario needs that). Output
    goes to `log`, never to a pipe, so a chatty server cannot block.
    """
    port = free_port()
    command = [sys.executable, "-m", "imap_mcp.server", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            command,
            env=dict(env, IMAP_MCP_SPEC_FIXTURES="true"),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = f"http://localhost:{port}/mcp"
    try:
        _wait_listening(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
