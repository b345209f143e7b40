"""Opening an authenticated IMAP connection as the settings say (implicit TLS, STARTTLS, none)."""

from __future__ import annotations

import contextlib
import datetime as dt
import imaplib
import socket
import ssl
import weakref
from typing import Any

from imapclient import IMAPClient, imap4, tls
from imapclient.exceptions import IMAPClientError, LoginError

from ..config import ImapSettings
from ..errors import MailboxError
from ..oauth.errors import OAuthError
from ..oauth.sasl import SaslAnswer, login
from ..tls import tls_context
from .deadline import watch
from .fetch import authenticate, read_lines_boundedly
from .mailbox_state import enable_qresync
from .mailboxes import name_roles
from .promptly import exchange_promptly
from .selection import deselect, note_selected, selected
from .tls_mismatch import (
    GREETING_GRACE,
    answers_tls,
    greets_within,
    implicit_port_advice,
    plain_greeting,
    plain_port_advice,
)
from .uidvalidity import saw


class MailboxUnavailable(MailboxError):
    """The IMAP server could not be reached or refused the login; the message says what to check."""


class _ImplicitTlsPort(MailboxError):
    """The port waits for a TLS handshake where a plain-text greeting was due (`tls_mismatch`)."""


class _PlainImap4(imap4.IMAP4WithTimeout):
    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock: socket.socket = super()._create_socket(timeout)
        watch(sock)  # before the greeting is read
        grace = min(GREETING_GRACE, timeout or self._timeout or GREETING_GRACE)
        if not greets_within(sock, grace) and answers_tls(self.host, self.port):
            sock.close()
            raise _ImplicitTlsPort
        return sock


class _TlsImap4(tls.IMAP4_TLS):
    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=self._timeout if timeout is None else timeout)
        watch(sock)  # before the TLS handshake and the greeting
        wrapped: ssl.SSLSocket = tls.wrap_socket(sock, self.ssl_context, self.host)
        return wrapped


#: the numbers a SELECT or EXAMINE answer may hold, which imapclient converts with int()
_SELECT_NUMBERS = {"EXISTS", "RECENT", "UIDNEXT", "UIDVALIDITY", "HIGHESTMODSEQ"}


class _WatchedClient(IMAPClient):
    """An `IMAPClient` whose socket is under the operation's deadline (`imap.deadline`) from the moment it connects.

    Every UIDVALIDITY it is told is noted (`uidvalidity.saw`), and the mailbox it selects (`selection`). A
    number a SELECT answer gives as NIL or garbage (`HIGHESTMODSEQ NIL` for an empty mailbox) is left out
    instead of failing the SELECT: whoever needs it finds it missing and says so, or does without.
    """

    def _create_IMAP4(self) -> imaplib.IMAP4:
        connect_timeout = getattr(self._timeout, "connect", None)
        if self.ssl:
            return _TlsImap4(self.host, self.port, self.ssl_context, connect_timeout)
        return _PlainImap4(self.host, self.port, connect_timeout)

    def select_folder(self, folder: str, readonly: bool = False) -> dict[bytes, Any]:
        answer: dict[bytes, Any] = super().select_folder(folder, readonly)
        note_selected(self, folder)
        saw(self, folder, answer.get(b"UIDVALIDITY"))
        return answer

    def folder_status(self, folder: str, what: Any = None) -> dict[bytes, Any]:
        answer: dict[bytes, Any] = super().folder_status(folder, what)
        saw(self, folder, answer.get(b"UIDVALIDITY"))
        return answer

    def _process_select_response(self, resp: dict[str, list[Any]]) -> dict[bytes, Any]:
        usable = {key: value for key, value in resp.items() if not _bad_number(key, value)}
        processed: dict[bytes, Any] = super()._process_select_response(usable)
        return processed


def _bad_number(key: str | bytes, value: list[Any]) -> bool:
    name = key.decode("ascii", "replace") if isinstance(key, bytes) else key
    if name.upper() not in _SELECT_NUMBERS:
        return False
    first = value[0] if value else None
    return not (isinstance(first, bytes | str) and first.strip().isdigit())


def _where(settings: ImapSettings) -> str:
    return f"{settings.host}:{settings.port} ({settings.tls} TLS)"


def _timed_out(settings: ImapSettings, waiting_for: str) -> MailboxUnavailable:
    return MailboxUnavailable(
        f"The IMAP server {_where(settings)} did not answer within IMAP_TIMEOUT={settings.timeout:g} s while waiting "
        f"for {waiting_for}; check IMAP_HOST and IMAP_PORT, or raise IMAP_TIMEOUT for a slow server."
    )


def _tls_failed(settings: ImapSettings, exc: ssl.SSLError) -> MailboxUnavailable:
    """A failed implicit-TLS handshake; a port that greets in plain text instead is named as such."""
    if not isinstance(exc, ssl.SSLCertVerificationError) and plain_greeting(settings.host, settings.port):
        return MailboxUnavailable(f"The IMAP server {plain_port_advice('IMAP', f'{settings.host}:{settings.port}')}")
    return MailboxUnavailable(
        f"TLS with the IMAP server {_where(settings)} failed ({exc.reason or exc}); check IMAP_TLS, "
        "IMAP_PORT and IMAP_CA_FILE."
    )


def connect(settings: ImapSettings) -> IMAPClient:
    """A logged-in client, or `MailboxUnavailable` with a message safe to show (never the password)."""
    try:
        client = _WatchedClient(
            settings.host,
            port=settings.port,
            ssl=settings.tls == "implicit",
            ssl_context=tls_context(settings.ca_file) if settings.tls == "implicit" else None,
            timeout=settings.timeout,
        )
    except TimeoutError:
        raise _timed_out(settings, "the connection, its TLS handshake and the IMAP greeting") from None
    except _ImplicitTlsPort:
        where = f"{settings.host}:{settings.port}"
        raise MailboxUnavailable(f"The IMAP server {implicit_port_advice('IMAP', where, settings.tls)}") from None
    except ssl.SSLError as exc:
        raise _tls_failed(settings, exc) from None
    except OSError as exc:
        raise MailboxUnavailable(
            f"Cannot reach the IMAP server {_where(settings)}: {exc.strerror or exc}; check IMAP_HOST and "
            "IMAP_PORT, and that the server is running."
        ) from None
    read_lines_boundedly(client)
    exchange_promptly(client)
    try:
        if settings.tls == "starttls":
            client.starttls(tls_context(settings.ca_file))
        log_in(client, settings)
        enable_qresync(client)
    except TimeoutError:
        _close_quietly(client)
        raise _timed_out(settings, "STARTTLS and the answer to LOGIN") from None
    except OAuthError as exc:
        _close_quietly(client)
        raise MailboxUnavailable(str(exc)) from None
    except LoginError:
        _close_quietly(client)
        raise MailboxUnavailable(
            f"The IMAP server {_where(settings)} refused the login for {settings.username!r}; check "
            "IMAP_USERNAME and IMAP_PASSWORD."
        ) from None
    except ssl.SSLError as exc:
        _close_quietly(client)
        raise MailboxUnavailable(
            f"STARTTLS with the IMAP server {_where(settings)} failed ({exc.reason or exc}); check IMAP_CA_FILE."
        ) from None
    except (IMAPClientError, imaplib.IMAP4.error, OSError) as exc:
        _close_quietly(client)
        raise MailboxUnavailable(
            f"The IMAP server {_where(settings)} failed during login ({type(exc).__name__}); check "
            "IMAP_TLS (does the server offer STARTTLS?) and try again."
        ) from None
    return client


def log_in(client: IMAPClient, settings: ImapSettings) -> str:
    """Log in as the settings say; returns how: LOGIN, or the SASL mechanism of an OAuth login.

    Raises imapclient's `LoginError` for a refused password and `OAuthError` for OAuth (`connect` and
    `imap-mcp check` each say what to do). The connection learns the mailboxes the settings name for roles
    (`mailboxes.name_roles`) first, so every role lookup on it knows them.
    """
    name_roles(client, settings.roles)
    if settings.oauth is None:
        client.login(settings.username, settings.password.reveal())
        return "LOGIN"
    capabilities = [c.decode("ascii", "replace").upper() for c in client.capabilities()]
    offered = {c[5:] for c in capabilities if c.startswith("AUTH=")}

    def attempt(mechanism: str, answer: SaslAnswer) -> bool:
        try:
            authenticate(client, mechanism, answer)
        except imaplib.IMAP4.abort:
            raise
        except IMAPClientError:
            return False
        return True

    return login(offered, settings.username, settings.oauth, settings.host, settings.port, attempt, "IMAP_USERNAME")


def _close_quietly(client: IMAPClient) -> None:
    with contextlib.suppress(Exception):  # already broken: nothing more to release
        client.shutdown()


def abandon(client: IMAPClient) -> None:
    """Close a connection that is out of step without a word: a LOGOUT would first read the stale answer."""
    _close_quietly(client)


def close(client: IMAPClient) -> None:
    """Log out politely; a connection that is already gone is simply dropped."""
    try:
        client.logout()
    except Exception:
        _close_quietly(client)


#: connections whose server refused an APPEND while a mailbox was selected (Courier: to the mailbox it has
#: selected read-only): on them the mailbox is left first (`selection.deselect`, which expunges nothing)
_DESELECT_TO_APPEND: weakref.WeakSet[IMAPClient] = weakref.WeakSet()


def append(
    client: IMAPClient, mailbox: str, message: bytes, flags: tuple[bytes, ...], when: dt.datetime | None = None
) -> bytes:
    """APPEND `message` to `mailbox`; the server's tagged answer (with APPENDUID where offered).

    A server that refuses it while a mailbox is selected is asked once more with none selected (a NO
    means nothing was appended), and on that connection every later APPEND leaves the mailbox first.
    """
    if client in _DESELECT_TO_APPEND:
        deselect(client)
    try:
        return _append(client, mailbox, message, flags, when)
    except imaplib.IMAP4.abort:
        raise
    except imaplib.IMAP4.error:
        if not selected(client) or not deselect(client):
            raise
    answer = _append(client, mailbox, message, flags, when)
    _DESELECT_TO_APPEND.add(client)
    return answer


def _append(
    client: IMAPClient, mailbox: str, message: bytes, flags: tuple[bytes, ...], when: dt.datetime | None
) -> bytes:
    return client.append(mailbox, message, flags=flags, msg_time=when)  # type: ignore[no-any-return]
