from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from harness import Account, Person, new_account, seeded_account, start_dovecot
from imapclient import IMAPClient
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.demo.dovecot import Dovecot


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    """One private Dovecot for the whole test session (public namespace Public/Team, Public/Shared)."""
    instance = start_dovecot(public_namespace=True)
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def account(dovecot: Dovecot) -> Account:
    """A fresh account of this test's own, holding the sample mail."""
    return seeded_account(dovecot)


@pytest.fixture
def client(account: Account) -> Iterator[IMAPClient]:
    """A direct IMAP connection to `account`, as another mail client of the same person would have."""
    connection = account.imap()
    try:
        yield connection
    finally:
        connection.logout()


@pytest.fixture
def empty_account(dovecot: Dovecot) -> Account:
    """A fresh account with only the server's default mailboxes, all empty."""
    return new_account(dovecot)


@pytest.fixture
def smtp(account: Account) -> Iterator[CaptureSMTP]:
    """An SMTP listener on loopback (no TLS) that takes the account's own login and keeps what it is sent."""
    with CaptureSMTP(auth=(account.username, account.password)) as server:
        yield server


@pytest.fixture
def sending_env(account: Account, smtp: CaptureSMTP) -> dict[str, str]:
    """The environment of an imap-mcp that sends through `smtp` as `SENDER`."""
    return account.env(**smtp.env(), SMTP_FROM=SENDER)


@pytest.fixture
def sent_copies(account: Account) -> Callable[[str], list[tuple[bytes, ...]]]:
    """The flags of every message in Sent with this Message-ID (without the session flag \\Recent)."""

    def flags_of(message_id: str) -> list[tuple[bytes, ...]]:
        client = account.imap()
        try:
            client.select_folder("Sent", readonly=True)
            uids = client.search(["HEADER", "Message-ID", message_id])
            fetched = client.fetch(uids, ["FLAGS"]).values()
            return [tuple(f for f in found[b"FLAGS"] if f != b"\\Recent") for found in fetched]
        finally:
            client.logout()

    return flags_of


@pytest.fixture
def person() -> Person:
    """A person who approves every dialog shown to them."""
    return Person()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback listener that accepts connections and never says a word."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()
