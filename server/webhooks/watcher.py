"""Watching INBOX: IDLE (NOOP polling where IDLE is missing), each new message one event, exactly once.

The store keeps the last UID seen and the mailbox's UIDVALIDITY. New messages become events in
the same transaction that moves that mark on, and only if the mark is still where this watcher
read it: a restart, or a second watcher, can neither lose nor repeat one. A new UIDVALIDITY
(the mailbox was re-created) starts again from the mailbox's current end.

One `InboxWatcher` watches one account, in a thread of its own that spends its life waiting in
IDLE. Its store work runs in the transactions it is given (`Transact`: a few threads of the
process, so a watcher of thousands of accounts keeps a few store connections). `stop()` ends it
at once, whatever it is waiting for: its connection is shut down.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from ..config import ImapSettings
from ..imap.connection import connect
from ..imap.fetch import take_response_codes
from ..imap.message_ids import MessageRef
from ..imap.session import Session
from ..logs import get_logger
from ..store.clock import store_time
from ..store.database import Tx
from .outbox import enqueue
from .payloads import describe
from .rows import load_row
from .settings import WebhookSettings

T = TypeVar("T")

MAILBOX = "INBOX"
#: longest IDLE before the watcher ends it, looks for new mail and starts another (the server's IDLE timeout is 30
#: minutes or more); how long a connection that died silently can go unnoticed, besides IMAP_TIMEOUT
IDLE_SLICE = 60.0
#: seconds between NOOPs on a server without IDLE
POLL_INTERVAL = 5.0
#: most new messages turned into events per transaction
BATCH = 200
MAX_RECONNECT_WAIT = 60.0
#: connections of one process being opened at once (a watcher taking hundreds of accounts opens them a few at a
#: time, not all in one burst)
CONNECTS_AT_ONCE = 16
_CONNECTING = threading.BoundedSemaphore(CONNECTS_AT_ONCE)


class Transact(Protocol):
    """Runs `work` in one store transaction and returns what it returned."""

    def __call__(self, work: Callable[[Tx], T]) -> T: ...


class InboxWatcher:
    """Turns new INBOX mail of one account into outbox events until `stop()`."""

    def __init__(
        self,
        imap: ImapSettings,
        settings: WebhookSettings,
        transact: Transact,
        added: Callable[[], None] = lambda: None,
    ) -> None:
        self.imap = imap
        self.account = imap.account
        self.settings = settings
        self.transact = transact
        #: called after new events were added (the deliveries start at once)
        self.added = added
        #: when the mailbox last answered, on the monotonic clock (the fleet writes it to the store in the store's time:
        #: the status's `last_heard_at`)
        self.heard_at: float | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._client: Session | None = None

    def stop(self) -> None:
        """End the watch now: a connection waiting in IDLE (or being read) is shut down."""
        self._stopped.set()
        with self._lock:
            client = self._client
        if client is not None:
            with contextlib.suppress(OSError):
                client.socket().shutdown(socket.SHUT_RDWR)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def run(self) -> None:
        """Watch until stopped, reconnecting with backoff (1 s doubling to 60 s) after a failure."""
        wait = 1.0
        while not self.stopped:
            try:
                with _CONNECTING:
                    client = connect(self.imap) if not self.stopped else None
            except Exception as exc:
                wait = self._retry_after(exc, wait)
                continue
            if client is None:
                return
            with self._lock:
                self._client = client
            try:
                if not self.stopped:  # stopped while connecting: stop() found no connection to shut down
                    self._watch(client)
                wait = 1.0
            except Exception as exc:
                wait = self._retry_after(exc, wait)
            finally:
                with self._lock:
                    self._client = None
                _close(client)

    def _retry_after(self, exc: Exception, wait: float) -> float:
        if self.stopped:
            return wait
        get_logger().warning(
            "watch: %s INBOX connection failed (%s); retrying in %g s", self.account, type(exc).__name__, wait
        )
        self._stopped.wait(wait)
        return min(wait * 2, MAX_RECONNECT_WAIT)

    def _watch(self, client: Session) -> None:
        selected = client.select_folder(MAILBOX, readonly=True)
        uidvalidity = int(selected[b"UIDVALIDITY"])
        idle = b"IDLE" in client.capabilities()
        while not self.stopped:
            self.catch_up(client, uidvalidity)
            self.heard_at = time.monotonic()
            if _told_of_new_mail(client):
                continue  # it arrived while catching up: the server told this session, and IDLE would not again
            if idle:
                _idle_until_new_mail(client, IDLE_SLICE)
            else:
                self._stopped.wait(POLL_INTERVAL)
                client.noop()

    def catch_up(self, client: Session, uidvalidity: int) -> int:
        """Turn messages past the stored mark into events; how many were added."""
        saved, mark = self.transact(self._read_mark)
        if not saved:
            return 0  # no webhook saved: nothing to tell, and no mark to keep
        if mark is None or int(mark[0]) != uidvalidity:
            self._start_mark(client, uidvalidity, mark)
            return 0
        last_uid = int(mark[1])
        new = sorted(uid for uid in client.search(["UID", f"{last_uid + 1}:*"]) if uid > last_uid)[:BATCH]
        if not new:
            return 0
        payloads = self._payloads(client, uidvalidity, new)

        def add(tx: Tx) -> int:
            tx.lock_account(self.account)
            row = load_row(tx, self.account)
            if row is None or not self._advance(tx, uidvalidity, last_uid, new[-1]):
                return 0  # cleared meanwhile, or another watcher got there first: nothing written
            return enqueue(tx, row, payloads, store_time(tx), self.settings)

        added = self.transact(add)
        if added:
            get_logger().info("watch: %s INBOX %d new message(s), uids %d-%d", self.account, added, new[0], new[-1])
            self.added()
        return added

    def _read_mark(self, tx: Tx) -> tuple[bool, tuple[Any, ...] | None]:
        """Whether a webhook is saved, and the stored (UIDVALIDITY, last UID) or None when there is none yet."""
        if load_row(tx, self.account) is None:
            return False, None
        return True, tx.one(
            "SELECT uidvalidity, last_uid FROM mailbox_marks WHERE account = ? AND mailbox = ?", self.account, MAILBOX
        )

    def _advance(self, tx: Tx, uidvalidity: int, last_uid: int, to_uid: int) -> bool:
        """Move the mark from `last_uid` to `to_uid`; False if it is no longer at `last_uid`."""
        moved = tx.run(
            "UPDATE mailbox_marks SET last_uid = ? WHERE account = ? AND mailbox = ? AND uidvalidity = ? "
            "AND last_uid = ?",
            to_uid,
            self.account,
            MAILBOX,
            uidvalidity,
            last_uid,
        )
        return moved == 1

    def _start_mark(self, client: Session, uidvalidity: int, old: tuple[Any, ...] | None) -> None:
        """Start at the mailbox's current end (first run, or a new mailbox generation)."""
        uids = client.search(["ALL"])
        end = max(uids) if uids else 0

        def mark(tx: Tx) -> None:
            if old is None:
                tx.run(
                    "INSERT INTO mailbox_marks (account, mailbox, uidvalidity, last_uid) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (account, mailbox) DO NOTHING",
                    self.account,
                    MAILBOX,
                    uidvalidity,
                    end,
                )
            else:
                tx.run(
                    "UPDATE mailbox_marks SET uidvalidity = ?, last_uid = ? WHERE account = ? AND mailbox = ? "
                    "AND uidvalidity = ?",
                    uidvalidity,
                    end,
                    self.account,
                    MAILBOX,
                    int(old[0]),
                )

        self.transact(mark)
        get_logger().info("watch: %s INBOX watched from uid %d (UIDVALIDITY %d)", self.account, end, uidvalidity)

    def _payloads(self, client: Session, uidvalidity: int, uids: Sequence[int]) -> list[dict[str, Any]]:
        """Each message's event data, bounded whatever the message holds (`payloads`); never the body."""
        return describe(client, self.account, [MessageRef(MAILBOX, uidvalidity, uid) for uid in uids])


def _told_of_new_mail(client: Session) -> bool:
    """Whether the server said a message arrived (EXISTS) in an answer since the last look (taking what it said).

    Dovecot brings a session's view up to date at the end of each command: a message that arrives during the
    catch-up's SEARCH is not in its result, but its EXISTS comes with the answer, and the IDLE after it
    would not tell of it again (it was found only when the IDLE slice ended, a minute later).
    """
    return bool(take_response_codes(client, "EXISTS"))


def _idle_until_new_mail(client: Session, seconds: float) -> None:
    """Wait in IDLE until the server says a message arrived (EXISTS) or `seconds` pass; other news (flags,
    expunges, "still here") keeps it waiting. A wake-up with nothing to read ends it too: imapclient reads an
    ended connection as no news, which would otherwise be waited on again at once."""
    deadline = time.monotonic() + seconds
    client.idle()
    try:
        if _answered_already(client):
            return
        while (left := deadline - time.monotonic()) > 0:
            said = client.idle_check(timeout=left)
            if not said and time.monotonic() < deadline:
                return  # woken with nothing to read: the connection may have ended (idle_done will say)
            if any(len(line) > 1 and line[1] == b"EXISTS" for line in said):
                return
    finally:
        client.idle_done()


def _answered_already(client: Session) -> bool:
    """Whether the server's next answer has already been read off the socket, into the connection's buffer.

    The server may send news right behind its `+ idling`, in the same packet; `idle_check` only waits for the
    socket, so it would not see them until the next answer. A peek that does not block finds them.
    """
    reader = client._imap.file  # type: ignore[attr-defined]  # imaplib's buffered reader of the socket
    sock = client.socket()
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return bool(reader.peek(1))
    except (BlockingIOError, ssl.SSLWantReadError):
        return False
    finally:
        sock.settimeout(timeout)


def _close(client: Session) -> None:
    try:
        client.logout()
    except Exception:
        with contextlib.suppress(Exception):
            client.shutdown()
