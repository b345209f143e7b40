"""Fixtures of the webhook tests: a store on real SQLite, a key ring, saved webhooks, the server's log."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness import Account
from postgres import PrivatePostgres
from watching import Operator, operating
from webhook_helpers import ACCOUNT, AUTH_HEADER, HOOK_URL, LogLines, new_key

from imap_mcp.server.logs import LOGGER_NAME
from imap_mcp.server.setting_values import Secret
from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.cipher import StoreCipher
from imap_mcp.server.webhooks.leases import hold_lease
from imap_mcp.server.webhooks.rows import save_endpoint
from imap_mcp.server.webhooks.settings import WebhookSettings


@pytest.fixture
def keys() -> list[str]:
    """A key ring of one key."""
    return [new_key()]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store: SQLite under tmp_path, or a new database on the private PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"
    cluster: PrivatePostgres = request.getfixturevalue("postgres")
    return cluster.new_database()


@pytest.fixture
def hook_settings(store_url: str, keys: list[str]) -> WebhookSettings:
    """The operator's settings: a fresh store (each kind), `keys`, every other setting at its default."""
    return WebhookSettings(store_url=store_url, store_keys=tuple(Secret(k) for k in keys))


@pytest.fixture
def store(hook_settings: WebhookSettings) -> Store:
    return Store(hook_settings.store_url)


@pytest.fixture
def save_webhook(store: Store, keys: list[str]) -> Callable[..., str]:
    """Save ACCOUNT's webhook as the operator command does; returns the signing secret."""

    def save(
        url: str = HOOK_URL, auth_header: tuple[str, str] | None = AUTH_HEADER, with_keys: list[str] | None = None
    ) -> str:
        with store.transaction() as tx:
            return save_endpoint(tx, StoreCipher(with_keys or keys), ACCOUNT, url, auth_header)

    return save


@pytest.fixture
def watcher(store: Store) -> str:
    """A watcher of ACCOUNT, as the store sees one running: it holds the account's lease (renewed far ahead)."""
    holder = "test-host:1:watcher"
    assert hold_lease(store, ACCOUNT, holder, time.time() + 3600)
    return holder


@pytest.fixture
def server_log() -> Iterator[LogLines]:
    """Every line the server logs during the test."""
    handler = LogLines()
    logger = logging.getLogger(LOGGER_NAME)
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


@pytest.fixture
def sqlite_operator(empty_account: Account, tmp_path: Path) -> Iterator[Operator]:
    """The account's operator with a SQLite store; retries every second."""
    with operating(
        empty_account, f"sqlite:///{tmp_path / 'store.sqlite3'}", tmp_path, IMAP_MCP_WEBHOOK_RETRY_INTERVAL="1"
    ) as running:
        yield running
