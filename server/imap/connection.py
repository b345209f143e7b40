"""Opening an authenticated IMAP connection as the settings say (implicit TLS, STARTTLS, none)."""

from __future__ import annotations

import contextlib
import imaplib
import ssl

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError, LoginError

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.tls import tls_context


class MailboxUnavailable(Exception):
    """The IMAP server could not be reached or refused the login; the message says what to check."""


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
        client = IMAPClient(
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
    try:
        if settings.tls == "starttls":
            client.starttls(tls_context(settings.ca_file))
        client.login(settings.username, settings.password.reveal())
    except TimeoutError:
        _close_quietly(client)
        raise _timed_out(settings, "STARTTLS and the answer to LOGIN") from None
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


def _close_quietly(client: IMAPClient) -> None:
    with contextlib.suppress(Exception):  # already broken: nothing more to release
        client.shutdown()


def close(client: IMAPClient) -> None:
    """Log out politely; a connection that is already gone is simply dropped."""
    try:
        client.logout()
    except Exception:
        _close_quietly(client)
