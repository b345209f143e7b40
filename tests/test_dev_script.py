"""`scripts/dev serve` sets up what serving needs and nothing of the tests (issue #28).

It ran in a copy of the checkout whose `.venv` holds two recording stand-ins, `python` and `imap-mcp`,
so what it would install into the venv and what it starts are seen without installing anything; the
system packages it needs are seen in its refusal when one is missing and the user is not root (an
`id` and a `python3` without venv on PATH stand in for that machine).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def recorder(path: Path, name: str, log: Path) -> None:
    path.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout with scripts/dev, pyproject.toml and a recording .venv; its path and the record."""
    tree, log = tmp_path / "checkout", tmp_path / "record"
    (tree / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "dev", tree / "scripts" / "dev")
    shutil.copy2(ROOT / "pyproject.toml", tree / "pyproject.toml")
    (tree / ".venv" / "bin").mkdir(parents=True)
    recorder(tree / ".venv" / "bin" / "python", "python", log)
    recorder(tree / ".venv" / "bin" / "imap-mcp", "imap-mcp", log)
    return tree, log


def run_dev(tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tree / "scripts" / "dev"), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def without_mailbox() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_"))}


@pytest.mark.parametrize(
    ("mailbox", "started"),
    [({}, "imap-mcp demo --port 8123"), ({"IMAP_HOST": "imap.example.com"}, "imap-mcp serve --port 8123")],
)
def test_serve_installs_the_package_without_its_test_tools(
    tmp_path: Path, mailbox: dict[str, str], started: str
) -> None:
    tree, log = checkout(tmp_path)
    done = run_dev(tree, {**without_mailbox(), **mailbox}, "serve", "--port", "8123")
    assert done.returncode == 0, done.stderr
    record = log.read_text().splitlines()
    assert record == [
        "python -m pip install -q --disable-pip-version-check -e .",
        "python -c import imap_mcp.server",
        started,
    ]
    assert (tree / ".venv" / ".imap-mcp-installed").read_text() == ".\n"


def test_serve_again_installs_nothing_more(tmp_path: Path) -> None:
    tree, log = checkout(tmp_path)
    assert run_dev(tree, without_mailbox(), "serve").returncode == 0
    assert run_dev(tree, without_mailbox(), "serve").returncode == 0
    installs = [line for line in log.read_text().splitlines() if "pip install" in line]
    assert installs == ["python -m pip install -q --disable-pip-version-check -e ."]


@pytest.mark.parametrize(
    ("mailbox", "needs"),
    [({}, "serving the demo needs dovecot-imapd python3-venv;"), ({"IMAP_HOST": "h"}, "serving needs python3-venv;")],
)
def test_serve_needs_neither_nginx_nor_postgresql(tmp_path: Path, mailbox: dict[str, str], needs: str) -> None:
    tree, log = checkout(tmp_path)
    machine = tmp_path / "machine"
    machine.mkdir()
    (machine / "id").write_text("#!/bin/sh\necho 1000\n")  # not root: the script says what to install
    (machine / "python3").write_text("#!/bin/sh\nexit 1\n")  # a Python without venv: python3-venv is missing
    for stand_in in machine.iterdir():
        stand_in.chmod(0o755)
    env = {**without_mailbox(), **mailbox, "PATH": f"{machine}:{os.environ['PATH']}"}
    done = run_dev(tree, env, "serve")
    assert done.returncode == 1
    assert needs in done.stderr and "sudo apt-get install" in done.stderr
    for package in ("nginx", "postgresql", "npm", "mailutils"):
        assert package not in done.stderr
    assert not log.exists()  # nothing installed, nothing started
