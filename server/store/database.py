"""The store: one schema on SQLite (the embedded default) or PostgreSQL (shared by replicas), with migrations.

It holds what must outlive a request and be shared by every replica: the approval ledger (one
approved effect runs once, `store.ledger`), the new-mail webhooks (settings, outbox, delivery
state, watcher leases) and the drafts this server saved (`store.drafts`). A SQLite file is created
0600 in a folder made 0700.

Queries are written once with `?` placeholders; `Store.transaction()` yields a cursor-like
`Tx` that runs them on either database. A write transaction locks what it touches: SQLite
takes the database's write lock at BEGIN IMMEDIATE; PostgreSQL locks rows with FOR UPDATE
(`Tx.lock_account`). Migrations run once, in order, under a lock, the first time a process
opens the store.

Faults are this module's to name: every error of either driver (a lock held past `BUSY_TIMEOUT`,
a read-only or full store, a file gone, a lost connection) leaves `Store.transaction()` as a
`StoreError` saying what went wrong and what to do, so code above the store sees one error tree.
A store keeps an identity (a random id written when it is made, and for SQLite the file's inode):
a store removed or replaced under a running process is refused (`StoreReplaced`), never quietly
used as if it held what the first one recorded.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import stat
import sys
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ..errors import ImapMcpError
from ..logs import get_logger

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
    # the drafts this server saved (save_draft, update_draft): update_draft replaces one of them without asking
    # while its bytes are still the ones recorded (`store.drafts`)
    (
        """CREATE TABLE saved_drafts (
            account TEXT NOT NULL,
            mailbox TEXT NOT NULL,
            uidvalidity BIGINT NOT NULL,
            uid BIGINT NOT NULL,
            digest TEXT NOT NULL,
            saved_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (account, mailbox, uidvalidity, uid)
        )""",
    ),
)
#: a fixed key for PostgreSQL's advisory lock around migrations
_MIGRATION_LOCK = 7_411_017
#: seconds a SQLite transaction waits for another connection's write lock before it gives up (a `StoreError`)
BUSY_TIMEOUT = 30.0


class StoreError(ImapMcpError):
    """The store cannot be opened or used; the message says what to check (never a password)."""


class StoreReplaced(StoreError):
    """The store is not the one this process opened: removed, replaced or re-created since."""


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
        #: SQLite: (device, inode) of the file opened, checked before every transaction
        self._file: tuple[int, int] | None = None
        if not self.postgres:
            _private_sqlite_file(self._path)
            self._file = self._file_now()
        self.identity = ""
        self._migrate()

    def __repr__(self) -> str:
        return f"Store({'postgresql' if self.postgres else 'sqlite'})"

    @property
    def _path(self) -> Path:
        return Path(self.url.removeprefix("sqlite:///"))

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """A write transaction: committed when the block ends, rolled back when it raises; a driver's error, from
        the block or the commit, leaves as a `StoreError` (`_fault`).

        Each thread keeps its own connection open between transactions: opening one costs a PostgreSQL
        login. A connection that failed is dropped, and the next transaction opens a new one.
        """
        if self._file is not None and self._file_now() != self._file:
            self._drop_connection()
            raise self._replaced("its file was removed or replaced")
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
        except _connection_errors() as exc:
            self._drop_connection()
            raise self._fault(exc) from exc

    def writable_identity(self) -> str:
        """This store's identity, once a write that changes nothing showed that it takes writes now and is still
        the store this process opened; `StoreError` if not (locked past `BUSY_TIMEOUT`, read-only, full, gone)."""
        with self.transaction() as tx:
            # a real change: SQLite writes nothing for an UPDATE that leaves the row's bytes as they were
            tx.run("UPDATE store_identity SET probes = probes + 1")
            self.check_identity(tx)
        return self.identity

    def check_identity(self, tx: Tx) -> None:
        """`StoreReplaced` unless the store `tx` runs on carries the identity this process found when it opened it
        (a database dropped and made again, or a SQLite file copied over the one opened, carries another)."""
        row = tx.one("SELECT id FROM store_identity")
        if row is None or row[0] != self.identity:
            raise self._replaced("its identity is another")

    def _replaced(self, how: str) -> StoreReplaced:
        where = f"The SQLite store at {self._path}" if self._file is not None else "The PostgreSQL store"
        return StoreReplaced(
            f"{where} is not the one imap-mcp opened when it started ({how}), so what that one recorded (which "
            "approved sends and changes already ran) is not there. Approved sends and changes are refused until "
            "imap-mcp is restarted; an approval given before will not run on the new store. Check the Sent mailbox "
            "(or the mailbox changed) before asking for a new approval."
        )

    def _fault(self, exc: Exception) -> StoreError:
        """The one translation of a driver's error into the project's: what went wrong, and what to do."""
        if isinstance(exc, sqlite3.Error):
            return StoreError(_sqlite_fault(exc, self._path))
        return StoreError(_postgres_fault(exc, self.url))

    def _file_now(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self._path)
        except OSError:
            return None
        return found.st_dev, found.st_ino

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
        path = self._path
        # mode=rw: a file removed under this process is an error, never made again empty by sqlite3.connect
        uri = f"file:{urllib.parse.quote(str(path))}?mode=rw"
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
            _nothing_mapped(connection, path)
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
            self.identity = _identity(tx)

    def schema_version(self) -> int:
        with self.transaction() as tx:
            row = tx.one("SELECT version FROM store_schema")
        return int(row[0]) if row else 0


def _identity(tx: Tx) -> str:
    """The store's identity, written once when it is made. Kept beside `store_schema`, outside the numbered
    migrations: like the schema version, it says which store this is, not what the store holds. `probes` counts
    the writes that showed the store takes one (`Store.writable_identity`)."""
    tx.run("CREATE TABLE IF NOT EXISTS store_identity (id TEXT NOT NULL, probes BIGINT NOT NULL)")
    row = tx.one("SELECT id FROM store_identity")
    if row is not None:
        return str(row[0])
    identity = secrets.token_hex(16)
    tx.run("INSERT INTO store_identity (id, probes) VALUES (?, 0)", identity)
    return identity


def _nothing_mapped(connection: sqlite3.Connection, path: Path) -> None:
    """Keep every file of the store out of this process's memory map, so a store that stops taking writes is an
    error, never a signal that kills the server (and every account with it).

    In WAL mode SQLite keeps the WAL's index in the `-shm` file, mapped shared and written in place. Made
    immutable (`chattr +i`) mid-send, the next write to that mapping is a SIGBUS (ext4 refuses a write fault on
    an immutable file: reproduced with `tests/store/test_store_faults.py`), which no Python code can catch. A
    rollback journal (`DELETE`, SQLite's default) maps nothing: the same fault is SQLITE_IOERR or
    SQLITE_READONLY, which `Store.transaction` names. `mmap_size=0` keeps the database file unmapped too (a
    file truncated under a mapping is a SIGBUS as well); it is SQLite's default, set in case a build changes it.
    Writers were already one at a time (BEGIN IMMEDIATE), so WAL's concurrent readers were not used.

    A store made in WAL mode by an earlier version is switched back once no other connection has it open; while
    one does (an older imap-mcp still running), this connection stays in WAL and says so.
    """
    connection.execute("PRAGMA mmap_size=0")
    if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        return
    connection.execute("PRAGMA busy_timeout=0")
    try:
        connection.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.OperationalError:
        get_logger().warning(
            "the SQLite store at %s stays in WAL mode while another process has it open (an imap-mcp older than "
            "this one); restart every process that uses it to leave WAL mode",
            path,
        )
    connection.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")


def _sqlite_fault(exc: sqlite3.Error, path: Path) -> str:
    """What a SQLite error means for the store at `path`, by its result code, and what to do about it."""
    code = getattr(exc, "sqlite_errorname", "") or ""
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        what = (
            f"is locked: another process has held its write lock for more than {BUSY_TIMEOUT:g} s. Find the "
            "process that holds it (another imap-mcp, or a tool that opened the file), then try again"
        )
    elif code.startswith("SQLITE_READONLY"):
        what = "cannot be written (read-only). Make the file and its folder writable by this user again"
    elif code == "SQLITE_FULL":
        what = "cannot be written: its disk is full. Free space there"
    elif code.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_PERM")):
        what = (
            "cannot be read or written (removed, made read-only or immutable, or its disk failing). Check the file "
            "and its folder"
        )
    else:
        what = f"failed ({code or type(exc).__name__}: {exc})"
    return f"The SQLite store at {path} (IMAP_MCP_STORE) {what}."


def _postgres_fault(exc: Exception, url: str) -> str:
    """What a psycopg error means for the store, and what to do about it (without the URL's password)."""
    sqlstate = getattr(exc, "sqlstate", None) or ""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if sqlstate == "25006":
        what = "is read-only (a standby, or default_transaction_read_only). Point it at the primary"
    elif sqlstate in ("53100", "53200"):
        what = "cannot be written: it is out of disk or memory. Free space there"
    elif sqlstate.startswith("08") or type(exc).__name__ == "OperationalError":
        what = f"cannot be reached ({_without(first, url)}). Check that PostgreSQL runs"
    else:
        what = f"failed ({sqlstate or type(exc).__name__}: {_without(first, url)})"
    return f"The PostgreSQL store (IMAP_MCP_STORE) {what}, then try again."


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
        if stat.S_IMODE(path.stat().st_mode) != 0o600:  # only then: a store made immutable opens, to say so
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
