"""Test harness: a throwaway Dovecot, per-test accounts, and imap-mcp servers to talk to.

Every test that touches mail talks to a real Dovecot (Debian `dovecot-imapd`) on 127.0.0.1,
started once per session by `server/demo/dovecot.py`. Each test gets its own account (`t-<hex>`,
any such name logs in with `ANY_USER_PASSWORD`), so tests never see each other's mail.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imapclient import IMAPClient
from mcp import StdioServerParameters

from imap_mcp.server.config import ImapSettings, Secret, Settings, TlsMode
from imap_mcp.server.demo.dovecot import Dovecot, free_port

ANY_USER_PASSWORD = "test-pw-7f3a"
#: the two eras, as the SDK client names them
MODES = ("legacy", "2026-07-28")


@dataclass
class Account:
    """One test account on the session's Dovecot."""

    dovecot: Dovecot
    username: str
    password: str = ANY_USER_PASSWORD

    def port_for(self, tls: TlsMode) -> int:
        return self.dovecot.tls_port if tls == "implicit" else self.dovecot.port

    def env(self, tls: TlsMode = "implicit", **extra: str) -> dict[str, str]:
        """The environment for an imap-mcp process serving this account."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_")) and k != "ELICITATION"}
        env.update(
            IMAP_HOST="127.0.0.1",
            IMAP_PORT=str(self.port_for(tls)),
            IMAP_USERNAME=self.username,
            IMAP_PASSWORD=self.password,
            IMAP_TLS=tls,
            IMAP_CA_FILE=str(self.dovecot.cert_file),
        )
        env.update(extra)
        return env

    def imap_settings(self, tls: TlsMode = "implicit") -> ImapSettings:
        return ImapSettings(
            host="127.0.0.1",
            port=self.port_for(tls),
            username=self.username,
            password=Secret(self.password),
            tls=tls,
            ca_file=self.dovecot.cert_file,
        )

    def settings(self, tls: TlsMode = "implicit") -> Settings:
        return Settings(imap=self.imap_settings(tls))

    def imap(self) -> IMAPClient:
        """A direct IMAP connection, as another mail client of the same person would have."""
        context = ssl.create_default_context(cafile=str(self.dovecot.cert_file))
        client = IMAPClient("127.0.0.1", self.dovecot.tls_port, ssl_context=context, timeout=30)
        client.login(self.username, self.password)
        return client


def new_account(dovecot: Dovecot) -> Account:
    return Account(dovecot, f"t-{uuid.uuid4().hex[:12]}")


def seeded_account(dovecot: Dovecot) -> Account:
    """A new account holding the sample mail of `server/demo/sample_mail.py`."""
    from imap_mcp.server.demo.sample_mail import seed

    account = new_account(dovecot)
    client = account.imap()
    try:
        seed(client)
    finally:
        client.logout()
    return account


def start_dovecot(**options: object) -> Dovecot:
    base = Path(os.environ.get("DOVECOT_TMPDIR", "/tmp"))
    dovecot = Dovecot(users={"alice": "alice-pw"}, any_user_password=ANY_USER_PASSWORD, base=base, **options)  # type: ignore[arg-type]
    dovecot.start()
    return dovecot


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "imap_mcp.server", "stdio"], env=env)


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`imap-mcp ARGS` run to its end, with stdout and stderr as text."""
    return subprocess.run(
        [sys.executable, "-m", "imap_mcp.server", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listened on port {port} within {timeout} s")


@contextlib.contextmanager
def http_server(
    env: dict[str, str],
    *args: str,
    log_path: Path | None = None,
    command: tuple[str, ...] = (sys.executable, "-m", "imap_mcp.server"),
    cwd: Path | None = None,
) -> Iterator[str]:
    """Run `imap-mcp serve` (`command serve`) on a free port; yields its MCP URL.

    The server's stderr goes to `log_path` (default: a temp file removed afterwards), never to
    a pipe nobody reads, so a chatty server cannot block on a full pipe.
    """
    port = free_port()
    with contextlib.ExitStack() as stack:
        if log_path is None:
            log_path = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="imap-mcp-log."))) / "stderr.log"
        log = stack.enter_context(open(log_path, "ab"))
        process = subprocess.Popen(
            [*command, "serve", "--port", str(port), *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            try:
                wait_for_port(port, process)
            except (RuntimeError, TimeoutError) as exc:
                raise RuntimeError(f"{exc}; server log:\n{log_path.read_text(errors='replace')[-4000:]}") from None
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def spec_fixture_server(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """`imap-mcp serve` in its default single-instance mode with the conformance fixtures on.

    The URL names `localhost`: the suite's DNS-rebinding scenario needs a local host name.
    """
    with http_server(dict(env, IMAP_MCP_SPEC_FIXTURES="true"), log_path=log_path) as url:
        yield url.replace("127.0.0.1", "localhost")


def structured(result: Any) -> dict[str, Any]:
    """The structured result of a tool call that must have succeeded."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content  # type: ignore[no-any-return]


def error_text(result: Any) -> str:
    """The message of a tool call that must have failed as a tool error (isError), not a protocol error."""
    assert result.is_error, result.structured_content
    return str(result.content[0].text)


def append_message(account: Account, raw: bytes, mailbox: str = "INBOX", flags: tuple[bytes, ...] = ()) -> int:
    """Append `raw` as another mail client would; returns its UID."""
    client = account.imap()
    try:
        response = client.append(mailbox, raw, flags=flags)
        return int(response.split(b"]")[0].split()[-1])
    finally:
        client.logout()


# --- Approvals (delete/move/manage_mailbox): ids, a scripted person, servers that lack things ---


def message_ids(account: Account, mailbox: str) -> list[str]:
    """The ids of every message in `mailbox`, as search_messages would return them."""
    from imap_mcp.server.imap.message_ids import MessageRef

    client = account.imap()
    try:
        uidvalidity = int(client.select_folder(mailbox, readonly=True)[b"UIDVALIDITY"])
        return [MessageRef(mailbox, uidvalidity, uid).id for uid in sorted(client.search(["ALL"]))]
    finally:
        client.logout()


@dataclass
class Person:
    """An elicitation callback: records every dialog it is shown and answers as told."""

    action: str = "accept"
    ticked: bool = True
    shown: list[str] = field(default_factory=list)

    async def __call__(self, context: object, params: object) -> object:
        from mcp.types import ElicitResult

        self.shown.append(params.message)  # type: ignore[attr-defined]
        content = {"approve": self.ticked} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


def pool_without(account: Account, capabilities: tuple[str, ...] = (), mailboxes: tuple[str, ...] = ()) -> object:
    """A pool whose connections do not see `capabilities` (e.g. MOVE) nor `mailboxes` in LIST.

    Dovecot still runs whatever is sent; this only changes what imap-mcp is told, as a server
    without those capabilities (or without a Trash that Dovecot would re-create) would tell it.
    """
    from imap_mcp.server.imap.connection import connect
    from imap_mcp.server.imap.pool import ImapPool

    hidden = {c.upper().encode() for c in capabilities}

    def connector(settings: ImapSettings) -> IMAPClient:
        client = connect(settings)
        client._cached_capabilities = tuple(c for c in client.capabilities() if c.upper() not in hidden)
        listed = client.list_folders
        client.list_folders = lambda *a, **k: [f for f in listed(*a, **k) if f[2] not in mailboxes]  # type: ignore[method-assign]
        return client

    return ImapPool(account.imap_settings(), connector=connector)
