"""Running the operator's commands and `imap-mcp watch` as processes against a test account."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness import Account

from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.operations import WebhookAccount
from imap_mcp.server.webhooks.settings import load_webhook_settings
from imap_mcp.server.webhooks.status import WebhookStatus


@dataclass
class Operator:
    """One account's operator: its environment (store, keys, settings) and the watchers started."""

    account: Account
    store_url: str
    keys: str
    logs: Path
    extra: dict[str, str] = field(default_factory=dict)
    watchers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        settings = {"IMAP_MCP_STORE": self.store_url, "IMAP_MCP_STORE_KEYS": self.keys, **self.extra, **extra}
        return self.account.env(**settings)

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "imap_mcp.server", *args],
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def set_webhook(self, url: str, auth_header: str | None = None) -> str:
        """`imap-mcp webhook set`; the signing secret it printed."""
        done = self.run("webhook", "set", "--url", url, *(["--auth-header", auth_header] if auth_header else []))
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    def start_watcher(self) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"watch-{len(self.watchers)}.log", "ab")  # noqa: SIM115 (closed with the process)
        process = subprocess.Popen(
            [sys.executable, "-m", "imap_mcp.server", "watch"],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        self.watchers.append(process)
        return process

    def log_lines(self) -> list[str]:
        return [line for path in sorted(self.logs.glob("watch-*.log")) for line in path.read_text().splitlines()]

    def webhook(self) -> WebhookAccount:
        settings = load_webhook_settings(self.env())
        return WebhookAccount(Store(self.store_url), settings, self.account.imap_settings().account)

    def status(self) -> WebhookStatus:
        return self.webhook().status()

    def wait_until_watching(self, timeout: float = 60.0) -> None:
        """Until a watcher has read where INBOX ends (mail appended after this is new)."""
        store, account = Store(self.store_url), self.account.imap_settings().account
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with store.transaction() as tx:
                if tx.one("SELECT last_uid FROM mailbox_marks WHERE account = ?", account):
                    return
            time.sleep(0.2)
        raise AssertionError(f"no watcher started watching within {timeout} s:\n" + "\n".join(self.log_lines()))

    def stop_all(self) -> None:
        for process in self.watchers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.watchers:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_for_status(operator: Operator, state: str, drained: bool = False, timeout: float = 90.0) -> WebhookStatus:
    """The webhook's status once it is in `state` and, when `drained`, its outbox is empty.

    A receiver has an event before the watcher, reading its answer, marks it delivered in the store:
    a test that saw the delivery waits for the outbox to empty too.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = operator.status()
        if found.state == state and (not drained or found.pending_events == 0):
            return found
        time.sleep(0.2)
    raise AssertionError(f"state {state!r} (drained: {drained}) not reached within {timeout} s: {operator.status()}")


@contextlib.contextmanager
def operating(account: Account, store_url: str, logs: Path, **extra: str) -> Iterator[Operator]:
    from webhook_helpers import new_key

    operator = Operator(account, store_url, new_key(), logs, dict(extra))
    try:
        yield operator
    finally:
        operator.stop_all()
