"""What the webhook tests share: the served account, a store's rows and events, log capture."""

from __future__ import annotations

import dataclasses
import logging
import secrets
from typing import Any

from mcp import Client

from imap_mcp.server.config import ImapSettings, Settings
from imap_mcp.server.serving.app import build_server
from imap_mcp.server.setting_values import Secret
from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.outbox import enqueue
from imap_mcp.server.webhooks.rows import load_row
from imap_mcp.server.webhooks.settings import WebhookSettings

ACCOUNT_USER = "alice"
#: the account as the server names it (user@host)
ACCOUNT = f"{ACCOUNT_USER}@127.0.0.1:1"  # as `served_webhooks` names it: login@host:port
HOOK_URL = "https://hooks.example.net/private-path/x7q?token=url-query-secret"
AUTH_HEADER = ("Authorization", "Bearer header-value-secret-9d1")


def new_key() -> str:
    return secrets.token_urlsafe(32)


def served_webhooks(settings: WebhookSettings, **client_options: Any) -> Client:
    """An in-memory MCP client of a server for ACCOUNT whose webhook settings are `settings` (no IMAP is used)."""
    imap = ImapSettings(host="127.0.0.1", port=1, username=ACCOUNT_USER, password=Secret("unused"))
    return Client(build_server(Settings(imap=imap, webhooks=settings)), **client_options)


def with_changes(settings: WebhookSettings, **changes: Any) -> WebhookSettings:
    return dataclasses.replace(settings, **changes)


def add_events(store: Store, settings: WebhookSettings, count: int, now: float, account: str = ACCOUNT) -> None:
    """`count` events for `account` created at `now`, as the watcher adds them."""
    with store.transaction() as tx:
        row = load_row(tx, account)
        assert row is not None
        payloads = [{"account": account, "mailbox": "INBOX", "uid": n} for n in range(count)]
        enqueue(tx, row, payloads, now, settings)


def event_sequences(store: Store) -> list[int]:
    with store.transaction() as tx:
        return [
            int(r[0])
            for r in tx.all("SELECT sequence FROM webhook_events WHERE account = ? ORDER BY sequence", ACCOUNT)
        ]


def set_columns(store: Store, **columns: Any) -> None:
    """Change ACCOUNT's stored webhook row directly (a state the watcher or an older version left)."""
    with store.transaction() as tx:
        for name, value in columns.items():
            tx.run(f"UPDATE webhooks SET {name} = ? WHERE account = ?", value, ACCOUNT)


class LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
