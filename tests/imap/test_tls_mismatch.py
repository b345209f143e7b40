"""A port that speaks the other kind of TLS is named as such at once, not after the whole IMAP_TIMEOUT.

Each test gives IMAP_TIMEOUT=60: a message that came from the timeout would say so, and only after a minute;
the mismatch's own words come from the probes of `server.tls_mismatch`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from harness import Account

from imap_mcp.server.check.imap import check_imap, imap_steps
from imap_mcp.server.config import ImapSettings, TlsMode
from imap_mcp.server.imap.connection import MailboxUnavailable, connect

#: far longer than any probe: a message after it would be the timeout's
TIMEOUT = 60.0


def _settings(account: Account, tls: TlsMode, port: int) -> ImapSettings:
    return dataclasses.replace(account.imap_settings(tls), port=port, timeout=TIMEOUT)


@pytest.mark.parametrize("tls", ["starttls", "none"])
def test_plain_text_against_the_implicit_tls_port_names_imap_tls(account: Account, tls: TlsMode) -> None:
    with pytest.raises(MailboxUnavailable) as refused:
        connect(_settings(account, tls, account.server.tls_port))
    said = str(refused.value)
    assert "waits for a TLS handshake" in said and "Set IMAP_TLS=implicit" in said, said
    assert f"IMAP_TLS={tls} (usually 143)" in said and "IMAP_TIMEOUT" not in said


def test_implicit_tls_against_a_plain_port_names_imap_tls(account: Account) -> None:
    with pytest.raises(MailboxUnavailable) as refused:
        connect(_settings(account, "implicit", account.server.port))
    said = str(refused.value)
    assert "greets in plain text" in said and "Set IMAP_TLS=starttls" in said and "(usually 993)" in said, said


def test_check_names_an_implicit_tls_port_before_the_timeout(account: Account) -> None:
    """The check would name it after the timeout too (a second look then): here it must be done well before."""
    settings = _settings(account, "starttls", account.server.tls_port)
    steps = imap_steps(settings)
    checking = threading.Thread(target=check_imap, args=(settings, steps), daemon=True)
    checking.start()
    checking.join(TIMEOUT / 2)  # a hang guard: done before half the timeout, or the check waited for it
    assert not checking.is_alive(), "the check still waits for a greeting"
    assert steps.failed is not None and steps.failed.name == "IMAP greeting"
    assert "waits for a TLS handshake" in steps.failed.detail and "IMAP_TLS=implicit" in steps.failed.detail


@contextlib.contextmanager
def late_greeter(delay: float) -> Iterator[int]:
    """A loopback IMAP server that greets `delay` seconds after each connection, then refuses every LOGIN."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            time.sleep(delay)
            conn.sendall(b"* OK [CAPABILITY IMAP4rev1] late\r\n")
            for line in conn.makefile("rb"):
                tag = line.split(b" ", 1)[0]
                if b" LOGIN " in line.upper():
                    conn.sendall(tag + b" NO [AUTHENTICATIONFAILED] no\r\n")
                elif b" CAPABILITY" in line.upper():
                    conn.sendall(b"* CAPABILITY IMAP4rev1\r\n" + tag + b" OK done\r\n")
                else:
                    conn.sendall(tag + b" BAD no\r\n")

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                conn, _ = listener.accept()
                threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_plain_server_that_greets_late_is_still_served(account: Account) -> None:
    """The probe runs on a connection of its own: the first one still gets its late greeting and goes on to LOGIN."""
    with late_greeter(delay=1.5) as port, pytest.raises(MailboxUnavailable) as refused:
        connect(_settings(account, "none", port))
    assert "refused the login" in str(refused.value), refused.value
