"""Installing a pinned npm package folder of the tests (`npm ci` from its committed lock file)."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

NPM_CI_TIMEOUT_S = 300


def ensure_installed(prefix: Path, installed: Callable[[], bool]) -> None:
    """`npm ci --prefix prefix` unless `installed()`; a failed install fails the test, never skips it.

    The install holds a file lock: pytest-xdist workers may all reach here at once.
    """
    lock_name = "imap-mcp-npm-ci-" + hashlib.sha256(str(prefix).encode()).hexdigest()[:12] + ".lock"
    with (Path(tempfile.gettempdir()) / lock_name).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed():
            return
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail(f"npm is not on PATH: it is needed to install {prefix} (scripts/dev setup installs it)")
        done = subprocess.run(
            [npm, "ci", "--prefix", str(prefix), "--no-audit", "--no-fund"],
            capture_output=True,
            text=True,
            timeout=NPM_CI_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0 or not installed():
            pytest.fail(f"npm ci --prefix {prefix} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
