"""A bounded pool of logged-in IMAP connections for one account.

It is a cache only: every operation is given a connection that is logged in and not in use
by anyone else, and no result depends on which connection it was. A connection idle for more
than `idle_seconds` is closed: by a small daemon thread (the reaper, started with the first idle
connection, waking every `idle_seconds / 2`, gone once nothing is idle or `close_all` runs), and
in any case before a connection would be handed out. One idle for more than `check_after`
seconds gets a NOOP before it is handed out to an operation that must not run twice. An operation
that fails because a reused connection had been dropped is run once more on a fresh one. A
connection on which an operation failed with a command left
unfinished (a protocol error: the rest of the answer would be read as the answer to the next
command) is closed instead of going back to the pool. An answer the code reading it cannot use (a
NIL where a number is due, an item missing: `answers.ANSWER_ERRORS`) becomes an `UnexpectedAnswer`
naming the command and the server's last line, never a raw exception.

An `InMailbox` operation reads one mailbox. The pool EXAMINEs it (read-only, so nothing it does can change
flags) and remembers that the connection has it examined, so the next read of the same mailbox on that
connection skips the EXAMINE, which on a large Maildir also saves the server re-reading its UID list (of the
idle connections, an operation takes the one that has its mailbox examined, else one that keeps none:
`_choose`). The memory is only a shortcut: before every such read the pool sends NOOP, then one STATUS
(`mailbox_state.noop_then_status`: the NOOP makes the server report new and expunged messages, or drop the
session if the mailbox was renumbered), and it EXAMINEs again whenever the UIDVALIDITY differs, or the
STATUS's UIDNEXT or message count differs from the session's view and the NOOP said nothing of it (Mailutils
tells a session nothing another made). The STATUS also gives the mailbox's state (`Examined.state`), which the
search-order cache reuses. Any other operation may select what it likes, so after one the pool forgets what
the connection had selected; a mailbox such an operation leaves selected read-write is left (UNSELECT, or
EXAMINE and CLOSE: nothing is expunged) before the connection goes back, so that what it changed is written
back when the tool says it is done (Mailutils shows flag changes to other sessions only then).
"""

from __future__ import annotations

import contextlib
import imaplib
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import anyio.to_thread
from imapclient.exceptions import IMAPClientError

from ..config import ImapSettings
from ..errors import ImapMcpError, MailboxError
from .answers import ANSWER_ERRORS, not_understood, server_text
from .connection import abandon, close, connect
from .deadline import Deadline, watch
from .failures import LIBRARY_ERRORS, explain
from .fetch import in_step, last_command_and_line
from .mailbox_state import Counts, Journal, MailboxState, counts_differ, journal_for, mailbox_state, noop_then_status
from .selection import deselect, selected_read_write
from .session import Session
from .uidvalidity import settle, uidvalidity_in

T = TypeVar("T")

#: what a dropped connection raises inside imapclient / imaplib
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    imaplib.IMAP4.abort,
    ConnectionError,
    socket.timeout,
    ssl.SSLError,
    EOFError,
    BrokenPipeError,
)
#: what opening a connection raises when it fails: a refusal, or one of the library's errors
_OPEN_ERRORS: tuple[type[Exception], ...] = (MailboxError, *LIBRARY_ERRORS)


class NoSuchMailbox(MailboxError):
    """The mailbox cannot be opened (it does not exist, or cannot hold messages)."""


@dataclass(frozen=True)
class Examined:
    """A mailbox examined on a connection, with the UIDVALIDITY the server reported just now and, where
    it has CONDSTORE, the mailbox's state as a STATUS reported it right after the session's view was
    brought up to date (EXAMINE or NOOP)."""

    mailbox: str
    uidvalidity: int
    state: MailboxState | None = None
    #: what the session has been told left the mailbox since it was examined (QRESYNC), kept with it
    journal: Journal | None = field(default=None, compare=False)
    #: the UIDNEXT and message count the session's view holds (from the EXAMINE, then each STATUS after a NOOP)
    counts: Counts = field(default=(None, None), compare=False)


@dataclass(frozen=True)
class InMailbox(Generic[T]):
    """An operation that only reads `mailbox`: `read(client, examined)` runs with it EXAMINEd."""

    mailbox: str
    read: Callable[[Session, Examined], T]


#: what the pool runs: a plain operation on a client of its own, or a read of one mailbox
Operation = Callable[[Session], T] | InMailbox[T]


def examine(client: Session, mailbox: str) -> Examined:
    """EXAMINE `mailbox` (read-only: no read here can set \\Seen) and return its UIDVALIDITY."""
    try:
        settle(client, mailbox)
        response = client.select_folder(mailbox, readonly=True)
        state = mailbox_state(client, mailbox)
    except imaplib.IMAP4.abort:
        raise  # the connection dropped (a connection error, retried): not a mailbox that cannot be opened
    except IMAPClientError as exc:
        raise NoSuchMailbox(
            f"Mailbox {mailbox!r} cannot be opened ({server_text(exc)}); check the name with list_mailboxes "
            "and pass it exactly as listed."
        ) from None
    uidvalidity = uidvalidity_in(response, "EXAMINE")
    counts = (_number(response.get(b"UIDNEXT")), _number(response.get(b"EXISTS")))
    if state is None or state.uidvalidity != uidvalidity:
        return Examined(mailbox, uidvalidity, counts=counts)
    return Examined(mailbox, uidvalidity, state, journal_for(client, state), counts)


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None


def _still_examined(client: Session, known: Examined) -> Examined | None:
    """`known` with the mailbox's state now, after bringing the session's view up to date; None when the
    mailbox is gone or was renumbered (a new UIDVALIDITY), or when messages came or left and the NOOP did not
    tell the session (Mailutils tells a session nothing another made): its view is out of date, EXAMINE again."""
    try:
        after = noop_then_status(client, known.mailbox, known.journal)
    except imaplib.IMAP4.abort:
        raise  # the connection dropped: the pool retries on a fresh one
    except IMAPClientError:
        return None
    if after.uidvalidity != known.uidvalidity or (not after.told and counts_differ(known.counts, after.counts)):
        return None
    journal = known.journal if after.state is not None else None
    return Examined(known.mailbox, known.uidvalidity, after.state, journal, after.counts)


@dataclass(frozen=True)
class _Reaper:
    thread: threading.Thread
    stop: threading.Event


@dataclass
class _Connection:
    client: Session
    since: float
    examined: Examined | None = None


class ImapPool:
    def __init__(
        self,
        settings: ImapSettings,
        max_size: int = 4,
        idle_seconds: float = 120.0,
        check_after: float = 5.0,
        connector: Callable[[ImapSettings], Session] = connect,
        shared_slots: threading.Semaphore | None = None,
    ) -> None:
        """`shared_slots` bounds the connections in use across several pools (one per account)."""
        self.settings = settings
        self._connector = connector
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_size)
        self._max_size = max_size
        self._running = 0  #: operations holding one of `_slots` (each holds at most one connection)
        self._shared_slots = shared_slots or threading.BoundedSemaphore(max_size)
        #: worker threads of this pool: a caller waiting for a slot waits here, holding no thread
        self._threads = anyio.CapacityLimiter(max_size)
        self._idle_seconds = idle_seconds
        self._check_after = check_after
        self._reaper: _Reaper | None = None  #: the running reaper, if any
        self._closed = False  #: `close_all` ran: a connection given back is closed instead
        self.opened = 0  #: connections opened so far (for tests and benchmarks)
        self.examines = 0  #: EXAMINE commands sent for `InMailbox` operations (for tests and benchmarks)

    def _expired(self, now: float) -> list[_Connection]:
        """Take the connections idle for longer than `idle_seconds` out of the pool; call with the lock held."""
        expired = [c for c in self._idle if now - c.since > self._idle_seconds]
        self._idle = [c for c in self._idle if now - c.since <= self._idle_seconds]
        return expired

    def _take_idle(self, check: bool, operation: Operation[T], spare_kept: bool = False) -> _Connection | None:
        """An idle connection for `operation` (`_choose`), if any; one idle for longer than `check_after` gets a
        NOOP first when `check` (an operation that may not be run twice: one that may is simply run again on a
        fresh connection if this one turns out dropped, so it saves the round trip)."""
        now = time.monotonic()
        with self._lock:
            expired = self._expired(now)
            chosen = self._choose(operation.mailbox if isinstance(operation, InMailbox) else None, spare_kept)
        for item in expired:
            close(item.client)
        if chosen is None:
            return None
        watch(chosen.client.socket())
        if check and now - chosen.since > self._check_after and chosen.examined is None:
            # an examined connection gets its NOOP from `_examined` anyway
            try:
                chosen.client.noop()
            except Exception:
                close(chosen.client)
                return None
        return chosen

    def _choose(self, mailbox: str | None, spare_kept: bool) -> _Connection | None:
        """Take the idle connection an operation is best run on; call with the lock held.

        The most recently used one that has `mailbox` examined (the mailbox of an `InMailbox` read), else
        one that keeps no mailbox examined, else the most recent: an operation evicts another mailbox's
        kept selection only when it has to. With `spare_kept` (an operation that reads other mailboxes
        than the one a read before it kept examined) none is taken rather than one that keeps a mailbox,
        while the pool has room for another connection: the caller opens one.
        """
        if not self._idle:
            return None

        def rank(position: int) -> tuple[int, int]:
            kept = self._idle[position].examined
            preference = 0 if kept is not None and kept.mailbox == mailbox else 1 if kept is None else 2
            return preference, -position

        best = min(range(len(self._idle)), key=rank)
        if spare_kept and rank(best)[0] == 2 and len(self._idle) + self._running <= self._max_size:
            return None
        return self._idle.pop(best)

    def _open(self) -> _Connection:
        client = self._connector(self.settings)
        watch(client.socket())
        with self._lock:
            self.opened += 1
        return _Connection(client, time.monotonic())

    def _give_back(self, connection: _Connection) -> None:
        connection.since = time.monotonic()
        with self._lock:
            closed = self._closed
            if not closed:
                self._idle.append(connection)
        if closed:
            close(connection.client)
            return
        with self._lock:
            if self._reaper is not None or not self._idle:
                return
            stop = threading.Event()
            interval = max(self._idle_seconds / 2, 0.05)
            thread = threading.Thread(
                target=_reap,
                args=(weakref.ref(self), stop, interval),
                name=f"imap-pool-reaper {self.settings.account}",
                daemon=True,
            )
            self._reaper = _Reaper(thread, stop)
        thread.start()

    def _give_back_if_in_step(self, connection: _Connection) -> None:
        """After a failed operation: back to the pool, unless a command was left unfinished (then closed)."""
        if in_step(connection.client):
            self._give_back(connection)
        else:
            abandon(connection.client)

    def _reap_once(self, stop: threading.Event) -> bool:
        """Close the expired idle connections; True when nothing is idle any more (the reaper may end)."""
        with self._lock:
            expired = self._expired(time.monotonic())
            done = not self._idle
            if done and self._reaper is not None and self._reaper.stop is stop:
                self._reaper = None
        for item in expired:
            close(item.client)
        return done

    def _examined(self, connection: _Connection, mailbox: str) -> Examined:
        """`mailbox` examined on `connection`, re-EXAMINEd unless the server confirms the remembered UIDVALIDITY."""
        known = connection.examined
        connection.examined = None
        still = _still_examined(connection.client, known) if known is not None and known.mailbox == mailbox else None
        if still is not None:
            connection.examined = still
            return still
        fresh = examine(connection.client, mailbox)
        with self._lock:
            self.examines += 1
        connection.examined = fresh
        return fresh

    def _attempt(self, connection: _Connection, operation: Operation[T]) -> T:
        if isinstance(operation, InMailbox):
            return operation.read(connection.client, self._examined(connection, operation.mailbox))
        connection.examined = None  # the operation may select anything
        return operation(connection.client)

    def run_sync(self, operation: Operation[T], retry: bool = True, spare_kept: bool = False) -> T:
        """Run `operation` on a connection of its own; retry once on a fresh one if a reused one dropped.

        Pass `retry=False` for an operation that must not run twice (an APPEND, a send), and `spare_kept`
        for one that should not take a connection keeping a mailbox examined while another can be opened
        (`_choose`). Whatever
        imapclient, sockets or TLS raise comes out as a `MailboxError` saying what to do (`failures`).
        The whole of it, retry included, has `settings.timeout` seconds (`imap.deadline`): past that
        its connection is shut down and the `MailboxError` says so.
        """
        try:
            return self._run_sync(operation, retry, spare_kept)
        except LIBRARY_ERRORS as exc:
            raise explain(exc, self.settings, _doing(operation)) from None

    def _run_sync(self, operation: Operation[T], retry: bool, spare_kept: bool) -> T:
        with self._slots, self._shared_slots, Deadline(self.settings.timeout) as deadline, self._counted():
            connection = self._take_idle(not retry, operation, spare_kept)
            reused = connection is not None
            try:
                return self._attempt_on(connection or self._open_within(deadline), operation, deadline)
            except CONNECTION_ERRORS:
                if not (reused and retry):
                    raise
            return self._attempt_on(self._open_within(deadline), operation, deadline)

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        """Count the running operation in `_running` while it runs."""
        with self._lock:
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1

    def _open_within(self, deadline: Deadline) -> _Connection:
        try:
            return self._open()
        except _OPEN_ERRORS:
            if deadline.expired:
                raise self._too_slow() from None
            raise

    def _attempt_on(self, connection: _Connection, operation: Operation[T], deadline: Deadline) -> T:
        """Run `operation` on `connection` and give it back; one lost or past the deadline is closed instead."""
        try:
            result = self._attempt(connection, operation)
        except CONNECTION_ERRORS:
            close(connection.client)
            if deadline.expired:
                raise self._too_slow() from None
            raise
        except BaseException as exc:
            if deadline.expired:
                close(connection.client)
                raise self._too_slow() from None
            self._give_back_if_in_step(connection)
            if isinstance(exc, ANSWER_ERRORS) and not isinstance(exc, ImapMcpError):
                raise not_understood(exc, *last_command_and_line(connection.client), _doing(operation)) from exc
            raise
        if deadline.expired or not _written_back(connection.client):  # finished, but its socket is shut down
            close(connection.client)
        else:
            self._give_back(connection)
        return result

    def _too_slow(self) -> MailboxError:
        return MailboxError(
            f"The IMAP server {self.settings.host} did not complete the operation within IMAP_TIMEOUT "
            f"({self.settings.timeout:g} s), so it was stopped and its connection closed. Try again; a repeated change "
            "does nothing twice. If the server is just slow, raise IMAP_TIMEOUT."
        )

    async def run(self, operation: Operation[T], retry: bool = True, spare_kept: bool = False) -> T:
        """`run_sync` in a worker thread, so the event loop never waits on the network."""
        return await anyio.to_thread.run_sync(self.run_sync, operation, retry, spare_kept, limiter=self._threads)

    def close_all(self) -> None:
        """Close every idle connection and stop the reaper; a connection still in use is closed when given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.stop.set()
            reaper.thread.join(self.settings.timeout)
        for item in idle:
            close(item.client)


def _written_back(client: Session) -> bool:
    """Leave a mailbox an operation left selected read-write, so that the server writes back what the operation
    changed before the tool says it is done (Mailutils keeps flag changes from other sessions, and from its
    files, until the mailbox is left); nothing is expunged (`selection.deselect`). False when the connection
    failed doing so (it is then closed; the operation's result stands)."""
    if not selected_read_write(client):
        return True
    try:
        deselect(client)
    except LIBRARY_ERRORS:
        return False
    return True


def _doing(operation: Operation[T]) -> str:
    """What an operation was doing, for a message about its failure."""
    if isinstance(operation, InMailbox):
        return f"reading the mailbox {operation.mailbox!r}"
    return "waiting for the IMAP server's answer"


def _reap(pool_ref: weakref.ref[ImapPool], stop: threading.Event, interval: float) -> None:
    """The reaper thread: every `interval`, close the pool's expired idle connections.

    It holds the pool only weakly between rounds, so a pool nobody uses any more is still freed
    (and its sockets with it) instead of being kept alive by its own reaper.
    """
    while not stop.wait(interval):
        pool = pool_ref()
        if pool is None or pool._reap_once(stop):
            return
        del pool
