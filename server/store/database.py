"""The store: one schema on SQLite (the embedded default) or PostgreSQL (shared by replicas), with migrations.

It holds what must outlive a request and be shared by every replica: the approval ledger (one
approved effect runs once, `store.ledger`) and the new-mail webhooks (settings, outbox, delivery
state, watcher leases). A SQLite file is created 0600 in a folder made 0700.

Queries are written once with `?` placeholders; `Store.transaction()` yields a cursor-like
`Tx` that runs them on either database. A write transaction locks what it touches: SQLite
takes the database's write lock at BEGIN IMMEDIATE; PostgreSQL locks rows with FOR UPDATE
(`Tx.lock_account`). Migrations run once, in order, under a lock, the first time a process
opens the store.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ..errors import ImapMcpError

#: each entry is one schema version; never edit a released one, append a new one
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE webhooks (
            account TEXT PRIMARY KEY,
            url_sealed TEXT NOT NULL,
            auth_header_sealed TEXT,
            secret_sealed TEXT NOT NULL,
            enabled INTEGER NOT NULL,
            paused_since DOUBLE PRECISION,
            consecutive_failures INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            last_attempt_at DOUBLE PRECISION,
            last_success_at DOUBLE PRECISION,
            next_retry_at DOUBLE PRECISION,
            retention_seconds BIGINT,
            max_events BIGINT,
            off_after_sequence BIGINT,
            last_sequence BIGINT NOT NULL DEFAULT 0,
            delivered_sequence BIGINT NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE webhook_events (
            account TEXT NOT NULL,
            sequence BIGINT NOT NULL,
            webhook_id TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (account, sequence)
        )""",
        """CREATE TABLE mailbox_marks (
            account TEXT NOT NULL,
            mailbox TEXT NOT NULL,
            uidvalidity BIGINT NOT NULL,
            last_uid BIGINT NOT NULL,
            PRIMARY KEY (account, mailbox)
        )""",
        """CREATE TABLE watcher_leases (
            account TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        )""",
    ),
    (
        """CREATE TABLE approval_ledger (
            approval TEXT PRIMARY KEY,
            account TEXT NOT NULL,
            tool TEXT NOT NULL,
            state TEXT NOT NULL,
            holder TEXT NOT NULL,
            since DOUBLE PRECISION NOT NULL,
            kept_until DOUBLE PRECISION NOT NULL,
            outcome TEXT NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX approval_ledger_kept_until ON approval_ledger (kept_until)",
    ),
    # when the watcher last heard from the mailbox (the webhook status's last_heard_at)
    ("ALTER TABLE mailbox_marks ADD COLUMN last_heard_at DOUBLE PRECISION",),
    # watchers that share the accounts (webhooks.fleet): each one alive, and how many accounts it may hold; a
    # watcher renews its leases by holder, and looks for accounts with events to deliver among its own
    (
        """CREATE TABLE watchers (
            holder TEXT PRIMARY KEY,
            capacity BIGINT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX watcher_leases_holder ON watcher_leases (holder)",
        "CREATE INDEX webhooks_pending ON webhooks (account) WHERE last_sequence > delivered_sequence",
    ),
)
#: a fixed key for PostgreSQL's advisory lock around migrations
_MIGRATION_LOCK = 7_411_017


class StoreError(ImapMcpError):
    """The store cannot be opened or used; the message says what to check (never a password)."""


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def execute(self, query: Any, params: Sequence[Any] = ...) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Tx:
    """One transaction: `run` a query written with `?` placeholders, read rows as tuples."""

    def __init__(self, cursor: _Cursor, postgres: bool) -> None:
        self._cursor = cursor
        self.postgres = postgres

    def run(self, query: str, *params: Any) -> int:
        """Execute; the number of rows changed."""
        self._cursor.execute(query.replace("?", "%s") if self.postgres else query, params)
        return int(self._cursor.rowcount)

    def one(self, query: str, *params: Any) -> tuple[Any, ...] | None:
        self.run(query, *params)
        row = self._cursor.fetchone()
        return tuple(row) if row is not None else None

    def all(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        self.run(query, *params)
        return [tuple(row) for row in self._cursor.fetchall()]

    def lock_account(self, account: str) -> None:
        """Hold the account's webhook row until commit (SQLite: the whole database is already held)."""
        if self.postgres:
            self.run("SELECT account FROM webhooks WHERE account = ? FOR UPDATE", account)


class Store:
    """A store at `url`: `sqlite:///path` or `postgresql://…`. Opening it applies pending migrations."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.postgres = url.startswith(("postgresql://", "postgres://"))
        self._local = threading.local()
        if not self.postgres:
            _private_sqlite_file(Path(url.removeprefix("sqlite:///")))
        self._migrate()

    def __repr__(self) -> str:
        return f"Store({'postgresql' if self.postgres else 'sqlite'})"

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """A write transaction: committed when the block ends, rolled back when it raises.

        Each thread keeps its own connection open between transactions: opening one costs a PostgreSQL
        login, and closing SQLite's last one checkpoints its write-ahead log to disk (milliseconds a tool call
        would wait). A connection that failed is dropped, and the next transaction opens a new one.
        """
        connection = self._connection()
        try:
            if self.postgres:
                with connection.transaction():
                    yield Tx(connection.cursor(), postgres=True)
                return
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(connection.cursor(), postgres=False)
            except BaseException:
                connection.rollback()
                raise
            connection.commit()
        except _connection_errors():
            self._drop_connection()
            raise

    def _connection(self) -> Any:
        kept = getattr(self._local, "connection", None)
        if kept is None:
            kept = self._pg_connection() if self.postgres else self._sqlite_connection()
            self._local.connection = kept
        return kept

    def _drop_connection(self) -> None:
        kept = getattr(self._local, "connection", None)
        self._local.connection = None
        if kept is not None:
            with contextlib.suppress(Exception):
                kept.close()

    def _sqlite_connection(self) -> sqlite3.Connection:
        path = self.url.removeprefix("sqlite:///")
        try:
            connection = sqlite3.connect(path, timeout=30, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open the SQLite store at {path}: {exc}; check IMAP_MCP_STORE.") from None
        return connection

    def _pg_connection(self) -> Any:
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                "IMAP_MCP_STORE names PostgreSQL, but its driver is not installed: install imap-mcp with its "
                "postgresql extra (pip install '.[postgresql]' in a checkout)."
            ) from None
        try:
            return psycopg.connect(self.url, connect_timeout=10, autocommit=True)
        except psycopg.Error as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise StoreError(
                f"Cannot open the PostgreSQL store: {_without(reason, self.url)}; check IMAP_MCP_STORE."
            ) from None

    def _migrate(self) -> None:
        with self.transaction() as tx:
            if tx.postgres:
                tx.run("SELECT pg_advisory_xact_lock(?)", _MIGRATION_LOCK)
            tx.run("CREATE TABLE IF NOT EXISTS store_schema (version INTEGER NOT NULL)")
            row = tx.one("SELECT version FROM store_schema")
            version = int(row[0]) if row else 0
            if row is None:
                tx.run("INSERT INTO store_schema (version) VALUES (0)")
            for number, statements in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in statements:
                    tx.run(statement)
                tx.run("UPDATE store_schema SET version = ?", number)

    def schema_version(self) -> int:
        with self.transaction() as tx:
            row = tx.one("SELECT version FROM store_schema")
        return int(row[0]) if row else 0


def _connection_errors() -> tuple[type[Exception], ...]:
    """What makes a transaction drop its connection (the next one opens a new one): sqlite3's error, and psycopg's
    base error once psycopg is imported (only a PostgreSQL store imports it: it costs a starting process 0.2 s)."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.Error,) if psycopg is None else (sqlite3.Error, psycopg.Error)


def _private_sqlite_file(path: Path) -> None:
    """Make the SQLite file's folder (0700, whatever the umask) and the file itself (0600), or `StoreError`
    naming the setting to change: the file keeps approvals and strangers' senders and subjects."""
    try:
        missing = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
        for folder in reversed(missing):
            folder.mkdir(mode=0o700)
            os.chmod(folder, 0o700)
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        os.chmod(path, 0o600)
    except OSError as exc:
        raise StoreError(
            f"Cannot create the SQLite store at {path} ({exc.strerror or exc}). Set IMAP_MCP_STORE to "
            "sqlite:///<a file in a folder this user can write> (or XDG_STATE_HOME to such a folder), or to a "
            "postgresql:// URL."
        ) from None


def _without(text: str, url: str) -> str:
    """`text` with the store URL's password (if any) removed."""
    password = url.split("://", 1)[-1].split("@", 1)[0].partition(":")[2] if "@" in url else ""
    return text.replace(password, "***") if password else text
