"""Watching INBOX: IDLE (NOOP polling where IDLE is missing), each new message one event, exactly once.

The store keeps the last UID seen and the mailbox's UIDVALIDITY. New messages become events in
the same transaction that moves that mark on, and only if the mark is still where this watcher
read it: a restart, or a second watcher, can neither lose nor repeat one. A new UIDVALIDITY
(the mailbox was re-created) starts again from the mailbox's current end.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..config import ImapSettings
from ..imap.connection import connect
from ..imap.message_ids import MessageRef
from ..imap.session import Session
from ..logs import get_logger
from ..store.database import Store, Tx
from .outbox import enqueue
from .payloads import describe
from .rows import load_row
from .settings import WebhookSettings

MAILBOX = "INBOX"
#: longest IDLE (or NOOP poll interval) before the watcher looks at its lease and stop flag again
IDLE_SLICE = 5.0
#: most new messages turned into events per transaction
BATCH = 200
MAX_RECONNECT_WAIT = 60.0


class InboxWatcher:
    """Turns new INBOX mail of one account into outbox events while `active` is set."""

    def __init__(
        self,
        imap: ImapSettings,
        store: Store,
        settings: WebhookSettings,
        active: threading.Event,
        stop: threading.Event,
        added: threading.Event,
    ) -> None:
        self.imap = imap
        self.account = imap.account
        self.store = store
        self.settings = settings
        self.active = active
        self.stop = stop
        self.added = added

    def run(self) -> None:
        """Watch until `stop`, reconnecting with backoff (1 s doubling to 60 s) after a failure."""
        wait = 1.0
        while not self.stop.is_set():
            if not self.active.wait(timeout=1.0):
                continue
            try:
                client = connect(self.imap)
            except Exception as exc:
                wait = self._retry_after(exc, wait)
                continue
            try:
                self._watch(client)
                wait = 1.0
            except Exception as exc:
                wait = self._retry_after(exc, wait)
            finally:
                _close(client)

    def _retry_after(self, exc: Exception, wait: float) -> float:
        get_logger().warning(
            "watch: %s INBOX connection failed (%s); retrying in %g s", self.account, type(exc).__name__, wait
        )
        self.stop.wait(wait)
        return min(wait * 2, MAX_RECONNECT_WAIT)

    def _watch(self, client: Session) -> None:
        selected = client.select_folder(MAILBOX, readonly=True)
        uidvalidity = int(selected[b"UIDVALIDITY"])
        idle = b"IDLE" in client.capabilities()
        while not self.stop.is_set() and self.active.is_set():
            self.catch_up(client, uidvalidity)
            self.heard_from_mailbox()
            if idle:
                client.idle()
                try:
                    client.idle_check(timeout=IDLE_SLICE)
                finally:
                    client.idle_done()
            else:
                self.stop.wait(IDLE_SLICE)
                client.noop()

    def catch_up(self, client: Session, uidvalidity: int) -> int:
        """Turn messages past the stored mark into events; how many were added."""
        with self.store.transaction() as tx:
            if load_row(tx, self.account) is None:
                return 0  # no webhook saved: nothing to tell, and no mark to keep
            mark = tx.one(
                "SELECT uidvalidity, last_uid FROM mailbox_marks WHERE account = ? AND mailbox = ?",
                self.account,
                MAILBOX,
            )
        if mark is None or int(mark[0]) != uidvalidity:
            self._start_mark(client, uidvalidity, mark)
            return 0
        last_uid = int(mark[1])
        new = sorted(uid for uid in client.search(["UID", f"{last_uid + 1}:*"]) if uid > last_uid)[:BATCH]
        if not new:
            return 0
        payloads = self._payloads(client, uidvalidity, new)
        with self.store.transaction() as tx:
            tx.lock_account(self.account)
            row = load_row(tx, self.account)
            if row is None or not self._advance(tx, uidvalidity, last_uid, new[-1]):
                return 0  # cleared meanwhile, or another watcher got there first: nothing written
            added = enqueue(tx, row, payloads, time.time(), self.settings)
        get_logger().info("watch: %s INBOX %d new message(s), uids %d-%d", self.account, added, new[0], new[-1])
        self.added.set()
        return added

    def heard_from_mailbox(self) -> None:
        """Note that the mailbox just answered: the webhook status's `last_heard_at`."""
        with self.store.transaction() as tx:
            tx.run(
                "UPDATE mailbox_marks SET last_heard_at = ? WHERE account = ? AND mailbox = ?",
                time.time(),
                self.account,
                MAILBOX,
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
        with self.store.transaction() as tx:
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
        get_logger().info("watch: %s INBOX watched from uid %d (UIDVALIDITY %d)", self.account, end, uidvalidity)

    def _payloads(self, client: Session, uidvalidity: int, uids: Sequence[int]) -> list[dict[str, Any]]:
        """Each message's event data, bounded whatever the message holds (`payloads`); never the body."""
        return describe(client, self.account, [MessageRef(MAILBOX, uidvalidity, uid) for uid in uids])


def _close(client: Session) -> None:
    try:
        client.logout()
    except Exception:
        with contextlib.suppress(Exception):
            client.shutdown()
