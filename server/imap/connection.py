"""Opening an authenticated IMAP connection as the settings say (implicit TLS, STARTTLS, none)."""

from __future__ import annotations

import contextlib
import datetime as dt
import imaplib
import socket
import ssl

from imapclient import IMAPClient, imap4, tls
from imapclient.exceptions import IMAPClientError, LoginError

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.errors import MailboxError
from imap_mcp.server.imap.deadline import watch
from imap_mcp.server.imap.fetch import read_lines_boundedly
from imap_mcp.server.imap.mailbox_state import enable_qresync
from imap_mcp.server.oauth.errors import OAuthError
from imap_mcp.server.oauth.sasl import imap_login
from imap_mcp.server.tls import tls_context


class MailboxUnavailable(MailboxError):
    """The IMAP server could not be reached or refused the login; the message says what to check."""


class _PlainImap4(imap4.IMAP4WithTimeout):
    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock: socket.socket = super()._create_socket(timeout)
        watch(sock)  # before the greeting is read
        return sock


class _TlsImap4(tls.IMAP4_TLS):
    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=self._timeout if timeout is None else timeout)
        watch(sock)  # before the TLS handshake and the greeting
        wrapped: ssl.SSLSocket = tls.wrap_socket(sock, self.ssl_context, self.host)
        return wrapped


class _WatchedClient(IMAPClient):
    """An `IMAPClient` whose socket is under the operation's deadline (`imap.deadline`) from the moment it connects."""

    def _create_IMAP4(self) -> imaplib.IMAP4:
        connect_timeout = getattr(self._timeout, "connect", None)
        if self.ssl:
            return _TlsImap4(self.host, self.port, self.ssl_context, connect_timeout)
        return _PlainImap4(self.host, self.port, connect_timeout)


def _where(settings: ImapSettings) -> str:
    return f"{settings.host}:{settings.port} ({settings.tls} TLS)"


def _timed_out(settings: ImapSettings, waiting_for: str) -> MailboxUnavailable:
    return MailboxUnavailable(
        f"The IMAP server {_where(settings)} did not answer within IMAP_TIMEOUT={settings.timeout:g} s while waiting "
        f"for {waiting_for}; check IMAP_HOST and IMAP_PORT, or raise IMAP_TIMEOUT for a slow server."
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
    except ssl.SSLError as exc:
        raise MailboxUnavailable(
            f"TLS with the IMAP server {_where(settings)} failed ({exc.reason or exc}); check IMAP_TLS, "
            "IMAP_PORT and IMAP_CA_FILE."
        ) from None
    except OSError as exc:
        raise MailboxUnavailable(
            f"Cannot reach the IMAP server {_where(settings)}: {exc.strerror or exc}; check IMAP_HOST and "
            "IMAP_PORT, and that the server is running."
        ) from None
    read_lines_boundedly(client)
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
    `imap-mcp check` each say what to do).
    """
    if settings.oauth is None:
        client.login(settings.username, settings.password.reveal())
        return "LOGIN"
    return imap_login(client, settings.username, settings.oauth, settings.host, settings.port)


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


def append(
    client: IMAPClient, mailbox: str, message: bytes, flags: tuple[bytes, ...], when: dt.datetime | None = None
) -> bytes:
    """APPEND `message` to `mailbox`; the server's tagged answer (with APPENDUID where offered).

    A mailbox EXAMINEd on this connection is closed first (CLOSE after EXAMINE expunges nothing):
    Courier refuses to APPEND to the mailbox it has selected read-only.
    """
    if client._imap.state == "SELECTED" and client._imap.is_readonly:
        client.close_folder()
    return client.append(mailbox, message, flags=flags, msg_time=when)  # type: ignore[no-any-return]
