"""Running the operator's commands and `imap-mcp watch` as processes against a test account."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness import Account
from receiver import Delivery, Receiver

from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.cipher import StoreCipher
from imap_mcp.server.webhooks.operations import WebhookAccount
from imap_mcp.server.webhooks.rows import save_endpoint
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

    def start_watcher(self, *args: str) -> subprocess.Popen[bytes]:
        """`imap-mcp watch ARGS` in a process group of its own, its output in `logs`."""
        log = open(self.logs / f"watch-{len(self.watchers)}.log", "ab")  # noqa: SIM115 (closed with the process)
        process = subprocess.Popen(
            [sys.executable, "-m", "imap_mcp.server", "watch", *args],
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


@dataclass
class FleetOperator(Operator):
    """The operator of several accounts in one accounts file (`account` is the first; they share its server), with
    their webhooks in one store, and `imap-mcp watch` processes sharing them."""

    accounts: dict[str, Account] = field(default_factory=dict)

    @property
    def file(self) -> Path:
        return self.logs / "accounts.toml"

    def write_accounts(self, *names: str, extra: str = "") -> None:
        """The accounts file with the accounts `names` (and `extra` text after them), as an editor saves it: a new
        file renamed over the old one."""
        tables = "".join(f'[accounts.{n}]\nIMAP_USERNAME = "{self.accounts[n].username}"\n' for n in names)
        draft = self.file.with_suffix(".new")
        draft.write_text(tables + extra)
        draft.chmod(0o600)
        draft.replace(self.file)

    def env(self, **extra: str) -> dict[str, str]:
        env = super().env(**extra)
        del env["IMAP_USERNAME"]
        return {**env, "IMAP_MCP_ACCOUNTS_FILE": str(self.file)}

    def identity(self, name: str) -> str:
        """The account's key in the store (login@host:port)."""
        return self.accounts[name].imap_settings().account

    def set_webhooks(self, receiver: Receiver, *names: str) -> None:
        """Save each account's webhook (to the receiver's path /hooks/NAME), as `imap-mcp webhook set` saves it."""
        cipher = StoreCipher([self.keys])
        store = Store(self.store_url)
        for name in names:
            path = f"/hooks/{name}"
            with store.transaction() as tx:
                receiver.secrets[path] = save_endpoint(tx, cipher, self.identity(name), receiver.url(path), None)

    def holders(self) -> dict[str, str]:
        """Each account's live lease: the store key → the pid of the watcher holding it."""
        with Store(self.store_url).transaction() as tx:
            found = tx.all("SELECT account, holder FROM watcher_leases WHERE expires_at > ?", time.time())
        return {str(account): str(holder).split(":")[1] for account, holder in found}

    def held_by(self, process: subprocess.Popen[bytes]) -> set[str]:
        return {account for account, pid in self.holders().items() if pid == str(process.pid)}

    def wait_for(self, what: str, done: Callable[[], bool], timeout: float = 90.0) -> None:
        """Until `done()`; an AssertionError naming `what`, the leases and the watchers' logs after `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done():
                return
            time.sleep(0.2)
        logs = "\n".join(self.log_lines()[-60:])
        raise AssertionError(f"{what}: not within {timeout} s; leases {self.holders()}; logs:\n{logs}")


@contextlib.contextmanager
def fleet_operating(accounts: dict[str, Account], store_url: str, work: Path, **extra: str) -> Iterator[FleetOperator]:
    """A fleet operator of `accounts` (all of them in the accounts file) with a new store key."""
    from webhook_helpers import new_key

    first = next(iter(accounts.values()))
    operator = FleetOperator(first, store_url, new_key(), work, dict(extra), accounts=dict(accounts))
    operator.write_accounts(*accounts)
    try:
        yield operator
    finally:
        operator.stop_all()


def census(deliveries: list[Delivery]) -> dict[tuple[str, int], list[str]]:
    """The webhook-ids delivered for each message, by (account, uid)."""
    found: dict[tuple[str, int], list[str]] = {}
    for delivery in deliveries:
        data = delivery.event["data"]
        found.setdefault((data["account"], data["uid"]), []).append(delivery.webhook_id)
    return found
