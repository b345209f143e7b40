"""IBM ContextForge (PyPI `mcp-contextforge-gateway`, pinned with every dependency in
`contextforge-requirements.txt` here), run the way an operator runs it.

ContextForge needs Python 3.12 or newer; the tests' own venv may be 3.11. The interpreter is found
in this order: `$CONTEXTFORGE_PYTHON`, `python3.13` and `python3.12` on PATH, then pyenv's
installed versions (`$PYENV_ROOT/versions/3.1[2-9]*`, default `~/.pyenv`). A machine without one is
a failure that says so, never a skip. The gateway is installed from the pinned list once per machine, into
a venv of the tests' cache named for the list (`pinned_cache`), under a file lock (pytest-xdist workers, and
other checkouts, may arrive together).

An operator starts `mcpgateway` with SQLite, admin credentials and a JWT secret, signs an admin
token with `mcpgateway.utils.create_jwt_token`, registers imap-mcp over Streamable HTTP
(`POST /gateways`, with the bearer token imap-mcp expects) and exposes its tools through a virtual
server (`POST /servers`); MCP clients then use `/servers/<id>/mcp`, where the tools are named
`<gateway>-<tool-with-dashes>`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pinned_cache import install_venv, pinned_dir

HERE = Path(__file__).parent
REQUIREMENTS = HERE / "contextforge-requirements.txt"
#: outside the checkout: the gateway's own packages carry test helpers (skip markers) that are not this project's
INSTALL = pinned_dir("contextforge", REQUIREMENTS)
VENV = INSTALL / "venv"
GATEWAY = VENV / "bin" / "mcpgateway"
PINNED_VERSION = "1.1.0"
INSTALL_TIMEOUT_S = 600
START_TIMEOUT_S = 240.0  # its first start migrates the database; slow on a loaded machine
#: the settings the gateway refuses to start without (its secret-strength checks want 12+ characters)
JWT_SECRET = "imap-mcp-tests-contextforge-jwt-secret-0123456789"
ADMIN_EMAIL = "admin@example.com"


def _is_312_or_newer(python: str) -> bool:
    probe = [python, "-c", "import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)"]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0
    return False


def find_python() -> str:
    """A Python >= 3.12 for the gateway (see the module docstring for the order); fails when there is none."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [
        os.environ.get("CONTEXTFORGE_PYTHON", ""),
        shutil.which("python3.13") or "",
        shutil.which("python3.12") or "",
        *sorted(glob.glob(str(pyenv_root / "versions" / "3.1[2-9]*" / "bin" / "python3")), reverse=True),
    ]
    for candidate in filter(None, candidates):
        if _is_312_or_newer(candidate):
            return candidate
    pytest.fail(
        "ContextForge needs Python >= 3.12 and none was found (CONTEXTFORGE_PYTHON, python3.13/python3.12 "
        f"on PATH, {pyenv_root}/versions/3.12+): install one, or set CONTEXTFORGE_PYTHON"
    )


def install_gateway() -> None:
    """The pinned gateway in its own venv, installed when missing (a changed pinned list is another `INSTALL`)."""
    install_venv(INSTALL, REQUIREMENTS, find_python, INSTALL_TIMEOUT_S)


@dataclass
class Gateway:
    """A running ContextForge: its base URL, an admin token for its REST API, and its log."""

    base_url: str
    token: str
    log_path: Path

    def api(self, method: str, path: str, body: Any = None) -> Any:
        response = httpx.request(
            method,
            f"{self.base_url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=60,
        )
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text[:2000]}"
        return response.json()

    def register(self, name: str, url: str, bearer_token: str) -> list[dict[str, Any]]:
        """Register an MCP server over Streamable HTTP; returns the tools the gateway found on it."""
        gateway = self.api(
            "POST",
            "/gateways",
            {
                "name": name,
                "url": url,
                "transport": "STREAMABLEHTTP",
                "auth_type": "bearer",
                "auth_token": bearer_token,
            },
        )
        return [tool for tool in self.api("GET", "/tools") if tool.get("gatewayId") == gateway["id"]]

    def virtual_server(self, name: str, tool_ids: list[str]) -> str:
        """A virtual server exposing `tool_ids`; returns its MCP URL."""
        server = self.api("POST", "/servers", {"server": {"name": name, "associated_tools": tool_ids}})
        return f"{self.base_url}/servers/{server['id']}/mcp"


def _admin_token(env: dict[str, str]) -> str:
    sign = [str(VENV / "bin" / "python"), "-m", "mcpgateway.utils.create_jwt_token", "--username", ADMIN_EMAIL,
            "--admin", "--exp", "120", "--secret", JWT_SECRET]  # fmt: skip
    done = subprocess.run(sign, capture_output=True, text=True, env=env, timeout=60, check=True)
    return done.stdout.strip().splitlines()[0]


def _wait_healthy(base_url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"ContextForge exited with {process.returncode}:\n{_tail(log_path)}")
        with contextlib.suppress(httpx.HTTPError, ValueError):
            if httpx.get(f"{base_url}/health", timeout=2).json().get("status") == "healthy":
                return
        time.sleep(0.2)
    pytest.fail(f"ContextForge was not healthy within {START_TIMEOUT_S} s:\n{_tail(log_path)}")


def _tail(log_path: Path) -> str:
    return log_path.read_text(errors="replace")[-4000:]


@contextlib.contextmanager
def run_gateway(home: Path, connect_mode: str = "auto") -> Iterator[Gateway]:
    """`mcpgateway` on a free loopback port with SQLite in `home`; `connect_mode` is its upstream era
    (`auto`, or `legacy` for 2025-11-25 upstream sessions whatever the client in front speaks)."""
    from imap_mcp.server.demo.dovecot import free_port

    install_gateway()
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "DATABASE_URL": f"sqlite:///{home / 'gateway.db'}",
        "BASIC_AUTH_USER": "admin",
        "BASIC_AUTH_PASSWORD": "imap-mcp-tests-basic-password",
        "PLATFORM_ADMIN_EMAIL": ADMIN_EMAIL,
        "PLATFORM_ADMIN_PASSWORD": "imap-mcp-tests-admin-password",
        "DEFAULT_USER_PASSWORD": "imap-mcp-tests-default-password",
        "JWT_SECRET_KEY": JWT_SECRET,
        "AUTH_ENCRYPTION_SECRET": "imap-mcp-tests-contextforge-encryption-0123456789",
        "SSRF_ALLOW_LOCALHOST": "true",
        "MCPGATEWAY_ELICITATION_ENABLED": "true",
        "MCPGATEWAY_UI_ENABLED": "false",
        "MCPGATEWAY_ADMIN_API_ENABLED": "true",
        "MCP_CLIENT_CONNECT_MODE": connect_mode,
        "SECURE_COOKIES": "false",
        "DEV_MODE": "true",
        "LOG_LEVEL": "WARNING",
    }
    log_path = home / "gateway.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(GATEWAY), "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        try:
            base_url = f"http://127.0.0.1:{port}"
            _wait_healthy(base_url, process, log_path)
            yield Gateway(base_url, _admin_token(env), log_path)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
