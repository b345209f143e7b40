"""Real IMAP servers besides Dovecot for the test matrix: Cyrus IMAP, Courier-IMAP and GNU Mailutils imap4d.

`scripts/dev setup` downloads the Debian packages of Cyrus and Courier and unpacks them into
`/var/cache/imap-mcp/imap-servers/root`, or the tree named by `IMAP_MCP_SERVERS_ROOT` (installing
them would make apt remove dovecot-imapd: all three provide `imap-server`); it apt-installs
`mailutils-imap4d`, which provides none. Each launcher runs its server in a short temp dir, on two
free loopback ports (plain and implicit TLS), and stops it by signalling its whole process group,
like `server/demo/dovecot.py` does for Dovecot.
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

#: outside the checkout: Cyrus, started as root, serves as `nobody`, who may not enter the checkout
UNPACKED = Path(os.environ.get("IMAP_MCP_SERVERS_ROOT", "/var/cache/imap-mcp/imap-servers/root"))


class ServerMissing(RuntimeError):
    """A matrix server's unpacked packages are not there; the message says how to get them."""


def unpacked(relative: str) -> Path:
    """A file of the unpacked Debian tree, or `ServerMissing`."""
    path = UNPACKED / relative
    if not path.exists():
        raise ServerMissing(f"{path} is missing: run `scripts/dev setup` (as root) to unpack Cyrus and Courier.")
    return path


def wait_for_login(
    port: int, user: str, password: str, process: subprocess.Popen[bytes], log: Callable[[], str], timeout: float
) -> None:
    """Ready means a real LOGIN succeeds, not just an open port."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            connection = imaplib.IMAP4("127.0.0.1", port, timeout=2)
            connection.login(user, password)
            connection.logout()
            return
        except (OSError, imaplib.IMAP4.error) as exc:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the IMAP server on port {port} did not start ({exc!r}). Log tail:\n{log()}"
                ) from None
            time.sleep(0.05)


def stop_group(process: subprocess.Popen[bytes], grace: float = 5) -> None:
    """SIGTERM the server's process group, SIGKILL if it lingers `grace` seconds (at once when 0)."""
    if grace > 0:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
    # children that outlive the leader (e.g. forked imapd processes) go with the group too
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def read_tail(path: Path, size: int = 3000) -> str:
    return path.read_text(errors="replace")[-size:] if path.exists() else ""


@dataclass
class MatrixServer:
    """What each launcher has: its temp dir, a plain and an implicit-TLS port on loopback, its process."""

    base: Path | None = None
    dir: Path = field(init=False)
    port: int = field(init=False, default=0)
    tls_port: int = field(init=False, default=0)
    process: subprocess.Popen[bytes] | None = field(init=False, default=None)

    @property
    def cert_file(self) -> Path:
        return self.dir / "tls" / "cert.pem"

    #: how long a stopping server may take after SIGTERM before it is killed
    stop_grace: float = field(init=False, default=5)

    #: the file in `dir` that takes the server's output
    log_name: ClassVar[str]

    @property
    def _log(self) -> Path:
        return self.dir / self.log_name

    def launch(
        self, argv: list[str], login: tuple[str, str], timeout: float, env: dict[str, str] | None = None
    ) -> None:
        """Start the server in a process group of its own, its output in its log; ready once `login` logs in."""
        with open(self._log, "ab") as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            wait_for_login(self.port, *login, self.process, lambda: read_tail(self._log), timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process, self.stop_grace)
            self.process = None
        if getattr(self, "dir", None) and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
