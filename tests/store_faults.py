"""Faults of a SQLite store for the tests, begun at an exact moment: another process holding its write lock, or
its file made immutable (`chattr +i`, which binds root too: the tests run as root in CI).

    fault = StoreFault("locked", path)
    ... fault.begin() from an SMTP handler (`FaultAtData`) or a test ...
    fault.end()   # always, also when begin() was never called
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from smtp_capture import Gate

Kind = Literal["locked", "immutable"]
KINDS: tuple[Kind, ...] = ("locked", "immutable")

#: holds the store's write lock (BEGIN IMMEDIATE) until its stdin closes
_LOCKER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
"""


def store_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


@contextlib.contextmanager
def locked_by_another_process(path: Path) -> Iterator[None]:
    process = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        assert process.stdout.readline() == b"locked\n"
        yield
    finally:
        process.stdin.close()
        process.wait(timeout=30)


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


class StoreFault:
    """One fault of the SQLite store at `path`, from `begin()` to `end()`."""

    def __init__(self, kind: Kind, path: Path) -> None:
        self.kind = kind
        self.path = path
        self.begun = False
        self._stack = contextlib.ExitStack()

    def begin(self) -> None:
        self._stack.enter_context(
            locked_by_another_process(self.path) if self.kind == "locked" else immutable(self.path)
        )
        self.begun = True

    def end(self) -> None:
        self._stack.close()


class FaultAtData(Gate):
    """For `CaptureSMTP(gate=...)`: begins `fault` once the whole message has reached the SMTP server, before it
    answers: from then on the message is sent, whatever imap-mcp's store does."""

    def __init__(self, fault: StoreFault) -> None:
        super().__init__(1)
        self.fault = fault

    async def hold(self) -> None:
        if not self.fault.begun:
            await asyncio.to_thread(self.fault.begin)
