"""The suite's servers and lanes: which IMAP servers each test runs on, and what the fast lane leaves out.

Which servers (the rule; `_servers_for`):

- `@pytest.mark.matrix`: a test whose outcome depends on the IMAP server's answers, a behaviour on the wire
  (what a server lists, finds, stores, names, refuses, how it orders or renumbers): it runs on every server of
  `SERVERS`, once each (`test_x[dovecot]`, `test_x[cyrus]`, ...).
- `@pytest.mark.servers(*names, reason=...)`: a matrix test about what only these servers do or lack.
- `@pytest.mark.dovecot_only(reason=...)`: a test about Dovecot itself (its log, doveadm), whatever its module says.
- no marker: Dovecot only. Arguments refused before any IMAP command is sent, dialog texts, annotations,
  transports (stdio, HTTP), the approval ledger, anything that would run the same on every server.

So every test runs at least on Dovecot, but for one narrowed to other servers by `servers(...)`. The closest
marker wins (a test's own over its module's `pytestmark`). A test marked `matrix` must take `mail_server`
(through `account` or `empty_account`): one that talks to no server of the matrix has no answer to compare.

The lanes (`scripts/dev test` runs the full one, CI too; `scripts/dev test --fast` passes `--fast`):

- full: every test, matrix tests on every server.
- fast (`--fast`): leaves out the tests marked `@pytest.mark.slow` (more than a few seconds: subprocess
  servers, gateways, the conformance suite, the installed wheel, watcher kills, replicas) and runs the matrix
  tests on Dovecot only; their other servers' runs are deselected, so the ids are the full lane's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness import Account, MailServer, Person, new_account, seeded_account, start_dovecot
from imapclient import IMAPClient
from postgres import PrivatePostgres
from schema_checks import check_each_schema_once
from servers.courier import Courier
from servers.cyrus import Cyrus
from servers.mailutils import Mailutils
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.demo.dovecot import Dovecot

#: the server matrix: every test marked `matrix` runs against each of these real IMAP servers
SERVERS = ("dovecot", "cyrus", "courier", "mailutils")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="the fast lane: leave out tests marked slow, and run the matrix tests on Dovecot only",
    )


def pytest_configure(config: pytest.Config) -> None:
    # the store (approval ledger, webhooks) defaults to $XDG_STATE_HOME: a private one per test process, never
    # the home of whoever runs the tests; every imap-mcp the tests start inherits it
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="imap-mcp-state.")
    check_each_schema_once()
    config.addinivalue_line(
        "markers", "dovecot_only(reason): a test about Dovecot itself (its log, doveadm); not run on the matrix"
    )
    config.addinivalue_line(
        "markers", "servers(*names, reason): a matrix test that is about what only these servers do (e.g. XLIST)"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ.get("XDG_STATE_HOME", ""), ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under `--dist loadgroup`, fail a grouped test whose group xdist could not name in its node id.

    The group keeps one slow set-up (the installed wheel, a gateway) on one worker; without it
    both workers build it and wait for each other, silently (pytest 9.2 ignores xdist 3.8's name).
    """
    if not getattr(item.config.option, "loadgroup", False):
        return
    # named as xdist names it: every xdist_group mark's name, sorted, joined by "_"
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    if names and not item.nodeid.endswith("@" + "_".join(sorted(names))):
        pytest.fail(
            f"marked xdist_group {sorted(names)}, but xdist could not group it: install the pytest and "
            "pytest-xdist versions pyproject.toml allows (pip install -e '.[test]')",
            pytrace=False,
        )


def _servers_for(metafunc: pytest.Metafunc) -> tuple[str, ...]:
    """The servers a test runs on, by the rule of this module's docstring."""
    definition = metafunc.definition
    if definition.get_closest_marker("dovecot_only"):
        return ("dovecot",)
    narrowed = definition.get_closest_marker("servers")
    if narrowed is not None:
        return tuple(narrowed.args)
    return SERVERS if definition.get_closest_marker("matrix") else ("dovecot",)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "mail_server" not in metafunc.fixturenames:
        if metafunc.definition.get_closest_marker("matrix"):
            raise pytest.Collector.CollectError(
                f"{metafunc.definition.nodeid} is marked matrix but talks to no server of the matrix: "
                "give it `account`, `empty_account` or `mail_server`, or take the marker off"
            )
        return
    servers = _servers_for(metafunc)
    if servers != ("dovecot",) or metafunc.definition.get_closest_marker("servers"):
        metafunc.parametrize("mail_server", servers, indirect=True)


def _left_out_of_the_fast_lane(item: pytest.Item) -> bool:
    """A slow test, or a matrix test's run on a server other than Dovecot."""
    callspec = getattr(item, "callspec", None)
    server = callspec.params.get("mail_server", "dovecot") if callspec is not None else "dovecot"
    return server != "dovecot" or item.get_closest_marker("slow") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("fast"):
        return
    kept = [item for item in items if not _left_out_of_the_fast_lane(item)]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if _left_out_of_the_fast_lane(item)])
        items[:] = kept


@pytest.fixture(scope="session")
def postgres() -> Iterator[PrivatePostgres]:
    """One private PostgreSQL cluster on loopback per session (per xdist worker), started when first needed."""
    cluster = PrivatePostgres()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


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


#: the matrix's other servers by name (Dovecot is the session's own)
LAUNCHERS: dict[str, type[Cyrus | Courier | Mailutils]] = {"cyrus": Cyrus, "courier": Courier, "mailutils": Mailutils}


class MatrixServers:
    """Cyrus, Courier and Mailutils, each started the first time a test of this worker needs it, stopped at the end."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.running: dict[str, MailServer] = {"dovecot": dovecot}
        self.stack = contextlib.ExitStack()

    def get(self, name: str) -> MailServer:
        if name not in self.running:
            base = Path(os.environ.get("DOVECOT_TMPDIR", "/tmp"))
            server = LAUNCHERS[name](base=base)
            server.start()
            self.stack.callback(server.stop)
            self.running[name] = server
        return self.running[name]


@pytest.fixture(scope="session")
def matrix_servers(dovecot: Dovecot) -> Iterator[MatrixServers]:
    servers = MatrixServers(dovecot)
    with servers.stack:
        yield servers


@pytest.fixture
def mail_server(request: pytest.FixtureRequest, matrix_servers: MatrixServers) -> MailServer:
    """The IMAP server this test runs against: each of its servers for a matrix test (`_servers_for`), else Dovecot."""
    return matrix_servers.get(getattr(request, "param", "dovecot"))


@pytest.fixture
def account(mail_server: MailServer) -> Account:
    """A fresh account of this test's own, holding the sample mail."""
    return seeded_account(mail_server)


@pytest.fixture
def client(account: Account) -> Iterator[IMAPClient]:
    """A direct IMAP connection to `account`, as another mail client of the same person would have."""
    connection = account.imap()
    try:
        yield connection
    finally:
        connection.logout()


@pytest.fixture
def empty_account(mail_server: MailServer) -> Account:
    """A fresh account with only the server's default mailboxes, all empty."""
    return new_account(mail_server)


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
            client.select_folder(account.mailbox("Sent"), readonly=True)
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
