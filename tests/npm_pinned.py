"""Installing a pinned npm package folder of the tests (`npm ci` from its committed lock file), once per machine."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from pinned_cache import is_done, mark_done, pinned_dir

NPM_CI_TIMEOUT_S = 300


def modules_of(folder: Path) -> Path:
    """The `node_modules` that `npm ci` makes from `folder`'s package.json and package-lock.json (`pinned_cache`)."""
    return pinned_dir(f"npm-{folder.name}", folder / "package.json", folder / "package-lock.json") / "node_modules"


def ensure_installed(folder: Path, installed: Callable[[], bool]) -> None:
    """`npm ci` of `folder`'s pins into `modules_of(folder)` unless it is there; a failed install fails the test,
    never skips it.

    The install holds a file lock: pytest-xdist workers, and other checkouts, may all reach here at once.
    """
    target = modules_of(folder).parent
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_done(target) and installed():
            return
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail(f"npm is not on PATH: it is needed to install {folder} (scripts/dev setup installs it)")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        for pin in ("package.json", "package-lock.json"):
            shutil.copyfile(folder / pin, target / pin)
        done = subprocess.run(
            [npm, "ci", "--prefix", str(target), "--no-audit", "--no-fund"],
            capture_output=True,
            text=True,
            timeout=NPM_CI_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0 or not installed():
            said = f"{done.stdout}\n{done.stderr}"
            pytest.fail(f"npm ci of {folder}'s pins into {target} failed ({done.returncode}):\n{said}")
        mark_done(target)
