"""An account's webhook row: what is stored, and its secrets opened with the key ring."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..setting_values import is_loopback
from ..store.database import Tx
from .cipher import StoreCipher, Unreadable

COLUMNS = (
    "account, url_sealed, auth_header_sealed, secret_sealed, enabled, paused_since, consecutive_failures, "
    "last_error, last_attempt_at, last_success_at, next_retry_at, retention_seconds, max_events, "
    "off_after_sequence, last_sequence, delivered_sequence"
)


@dataclass(frozen=True)
class WebhookRow:
    account: str
    url_sealed: str
    auth_header_sealed: str | None
    secret_sealed: str
    enabled: bool
    paused_since: float | None
    consecutive_failures: int
    last_error: str | None
    last_attempt_at: float | None
    last_success_at: float | None
    next_retry_at: float | None
    retention_seconds: int | None
    max_events: int | None
    off_after_sequence: int | None
    last_sequence: int
    delivered_sequence: int

    @property
    def paused(self) -> bool:
        return self.paused_since is not None


@dataclass(frozen=True)
class Receiver:
    """A row's secrets, decrypted: only the watcher's delivery and the operator's command see these."""

    url: str
    auth_header: tuple[str, str] | None
    secret: str

    @property
    def host(self) -> str | None:
        return url_host(self.url)

    @property
    def secret_values(self) -> tuple[str, ...]:
        """Every value that must never appear in a result or log line."""
        header = self.auth_header[1] if self.auth_header else ""
        return tuple(v for v in (self.url, _path_and_query(self.url), header, self.secret) if v)


def url_host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def _path_and_query(url: str) -> str:
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return path if path not in ("", "/") else ""


def invalid_url_reason(url: str) -> str | None:
    """Why `url` cannot receive events, or None: an https URL with a host, or plain http to a loopback host.

    Events carry senders and subjects, and the request a signature and the auth header: in the clear
    only where they never leave the machine.
    """
    if not url.strip():
        return "the URL is empty"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the URL cannot be parsed"
    if parts.scheme not in ("http", "https"):
        return "the URL does not start with https:// (or http:// for a loopback host)"
    if not parts.hostname:
        return "the URL has no host"
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return "plain http:// is accepted only for a loopback host (such as 127.0.0.1)"
    return None


def new_signing_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key inside a `whsec_…` secret."""
    return base64.b64decode(secret.removeprefix("whsec_"))


def load_row(tx: Tx, account: str) -> WebhookRow | None:
    found = tx.one(f"SELECT {COLUMNS} FROM webhooks WHERE account = ?", account)
    if found is None:
        return None
    values = list(found)
    values[4] = bool(values[4])
    return WebhookRow(*values)


def open_endpoint(row: WebhookRow, cipher: StoreCipher) -> Receiver:
    """The row's URL, auth header and secret; `Unreadable` when a configured key opens none of them."""
    url = cipher.decrypt(row.url_sealed, row.account, "url")
    secret = cipher.decrypt(row.secret_sealed, row.account, "secret")
    header = cipher.decrypt(row.auth_header_sealed, row.account, "auth_header") if row.auth_header_sealed else None
    return Receiver(url=url, auth_header=_split_header(header) if header else None, secret=secret)


def _split_header(header: str) -> tuple[str, str]:
    name, _, value = header.partition(":")
    return name.strip(), value.strip()


def parse_auth_header(text: str) -> tuple[str, str]:
    """`Name: value` as given to `webhook set --auth-header`; ValueError saying the form."""
    name, colon, value = text.partition(":")
    if not colon or not name.strip() or not value.strip() or any(c in text for c in "\r\n"):
        raise ValueError("--auth-header must look like 'Authorization: Bearer <token>' (a name, a colon, a value)")
    if not all(33 <= ord(c) <= 126 and c not in '()<>@,;:\\"/[]?={}' for c in name.strip()):
        raise ValueError("--auth-header has an invalid header name")
    return name.strip(), value.strip()


def save_endpoint(tx: Tx, cipher: StoreCipher, account: str, url: str, auth_header: tuple[str, str] | None) -> str:
    """Save (and turn on) the account's webhook with a new signing secret; returns the secret.

    Delivery state starts afresh; the outbox limits and the events already kept stay.
    """
    secret = new_signing_secret()
    header = f"{auth_header[0]}: {auth_header[1]}" if auth_header else None
    sealed = (
        cipher.encrypt(url, account, "url"),
        cipher.encrypt(header, account, "auth_header") if header else None,
        cipher.encrypt(secret, account, "secret"),
    )
    tx.lock_account(account)
    changed = tx.run(
        "UPDATE webhooks SET url_sealed = ?, auth_header_sealed = ?, secret_sealed = ?, enabled = 1, "
        "paused_since = NULL, consecutive_failures = 0, last_error = NULL, next_retry_at = NULL, "
        "off_after_sequence = NULL WHERE account = ?",
        *sealed,
        account,
    )
    if not changed:
        tx.run(
            "INSERT INTO webhooks (account, url_sealed, auth_header_sealed, secret_sealed, enabled) "
            "VALUES (?, ?, ?, ?, 1)",
            account,
            *sealed,
        )
    return secret


#: every table whose rows belong to one account's webhook
ACCOUNT_TABLES = ("webhooks", "webhook_events", "mailbox_marks", "watcher_leases")


def adopt_legacy_rows(tx: Tx, cipher: StoreCipher, account: str, legacy: str) -> bool:
    """Give `account` the webhook rows an earlier version kept under `legacy` (`login@host`, without the port),
    unless it has a webhook of its own; whether it took any. The row's secrets are bound to the name they were
    sealed under, so they are opened and sealed again under `account`: without a key that opens them nothing is
    adopted (the row stays, `unreadable` to the old name, until `webhook set`). Idempotent."""
    if legacy == account or load_row(tx, account) is not None:
        return False
    row = load_row(tx, legacy)
    if row is None:
        return False
    try:
        receiver = open_endpoint(row, cipher)
    except Unreadable:
        return False
    header = f"{receiver.auth_header[0]}: {receiver.auth_header[1]}" if receiver.auth_header else None
    tx.run(
        "UPDATE webhooks SET url_sealed = ?, auth_header_sealed = ?, secret_sealed = ? WHERE account = ?",
        cipher.encrypt(receiver.url, account, "url"),
        cipher.encrypt(header, account, "auth_header") if header else None,
        cipher.encrypt(receiver.secret, account, "secret"),
        legacy,
    )
    for table in ACCOUNT_TABLES:
        tx.run(f"UPDATE {table} SET account = ? WHERE account = ?", account, legacy)
    return True


def clear_endpoint(tx: Tx, account: str) -> bool:
    """Remove the account's webhook, its outbox and where the watcher had got to; False if none was saved."""
    tx.run("DELETE FROM webhook_events WHERE account = ?", account)
    tx.run("DELETE FROM mailbox_marks WHERE account = ?", account)
    return tx.run("DELETE FROM webhooks WHERE account = ?", account) > 0
