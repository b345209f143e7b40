"""The FastMCP proxy (PyPI `fastmcp`, pinned with every dependency in `fastmcp-requirements.txt` here), run the way
its documentation shows: `create_proxy` of imap-mcp's Streamable HTTP URL (with the bearer token imap-mcp
expects), served over Streamable HTTP at `/mcp`.

Installed from the pinned list once per machine, into a venv of the tests' cache named for the list
(`pinned_cache`), with the tests' own Python. By default the proxy mirrors the era of the client in front: a
2026-07-28 client reaches imap-mcp in 2026-07-28 (an `input_required` result relayed, the answer's
`inputResponses` and `requestState` passed back), a 2025-11-25 client in 2025-11-25 (imap-mcp's pushed
elicitation forwarded to the client in front).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pinned_cache import install_venv, pinned_dir

HERE = Path(__file__).parent
REQUIREMENTS = HERE / "fastmcp-requirements.txt"
INSTALL = pinned_dir("fastmcp", REQUIREMENTS)
PINNED_VERSION = "4.2.3"
START_TIMEOUT_S = 120.0
#: the operator's proxy: the upstream and the port come from the environment
PROXY_SOURCE = """
import os
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server import create_proxy

bearer = {"Authorization": "Bearer " + os.environ["UPSTREAM_TOKEN"]}
upstream = StreamableHttpTransport(os.environ["UPSTREAM_URL"], headers=bearer)
proxy = create_proxy(upstream, name="imap-mcp behind FastMCP")
proxy.run(transport="http", host="127.0.0.1", port=int(os.environ["PROXY_PORT"]), show_banner=False)
"""


def python() -> Path:
    """The proxy venv's Python, the pinned FastMCP installed in it when missing."""
    return install_venv(INSTALL, REQUIREMENTS, lambda: sys.executable) / "bin" / "python"


def installed_version() -> str:
    probe = [str(python()), "-c", "import fastmcp; print(fastmcp.__version__)"]
    return subprocess.run(probe, capture_output=True, text=True, timeout=60, check=True).stdout.strip()


def _wait_listening(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the FastMCP proxy exited with {process.returncode}:\n{log_path.read_text()[-4000:]}")
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=2)
            return
        time.sleep(0.2)
    pytest.fail(f"the FastMCP proxy did not listen within {START_TIMEOUT_S} s:\n{log_path.read_text()[-4000:]}")


@contextlib.contextmanager
def run_proxy(upstream_url: str, upstream_token: str, log_path: Path) -> Iterator[str]:
    """The proxy of `upstream_url` on a free loopback port; yields its MCP URL (its output goes to `log_path`)."""
    from imap_mcp.server.demo.dovecot import free_port

    interpreter = python()
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "UPSTREAM_URL": upstream_url, "UPSTREAM_TOKEN": upstream_token}
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(interpreter), "-c", PROXY_SOURCE],
            env={**env, "PROXY_PORT": str(port), "HOME": str(log_path.parent)},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            _wait_listening(url, process, log_path)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
