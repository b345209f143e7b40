"""Where the tests install the pinned tools they run (ContextForge, FastMCP, the conformance suite, the Inspector,
mcp-hub).

Once per machine, not per checkout: each install lives in a folder named for a digest of the files that pin it
(a lock file, a requirements list), under `$IMAP_MCP_TEST_CACHE`, default `~/.cache/imap-mcp-tests`. A clean
clone with the same pins reuses it; a changed pin installs beside it. An install counts only once its `done`
stamp is written, so one cut off half-way is made again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

CACHE = Path(
    os.environ.get("IMAP_MCP_TEST_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "imap-mcp-tests"
)


def pinned_dir(kind: str, *pins: Path) -> Path:
    """The folder of the install of `kind` that `pins` (their bytes) describe."""
    digest = hashlib.sha256()
    for pin in pins:
        digest.update(pin.read_bytes())
    return CACHE / f"{kind}-{digest.hexdigest()[:16]}"


def is_done(folder: Path) -> bool:
    """Whether the install in `folder` ran to its end."""
    return (folder / "done").exists()


def mark_done(folder: Path) -> None:
    (folder / "done").touch()


def install_venv(folder: Path, requirements: Path, python: Callable[[], str], timeout_s: int = 600) -> Path:
    """`folder/venv`, made by `python()` with every package of `requirements` installed, unless it is there;
    returns it. A failed install fails the test, never skips it.

    The install holds a file lock: pytest-xdist workers, and other checkouts, may all reach here at once.
    """
    venv = folder / "venv"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_done(folder) and (venv / "bin" / "python").exists():
            return venv
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        steps = [
            [python(), "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "-r", str(requirements)],
        ]  # fmt: skip
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=timeout_s, check=False)
            if done.returncode != 0:
                pytest.fail(
                    f"installing {requirements.name} failed at {step[:3]}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
                )
        mark_done(folder)
    return venv
