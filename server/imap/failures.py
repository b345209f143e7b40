"""Every exception an IMAP call can raise, as a `MailboxError` whose message a model can act on.

imapclient raises imaplib's `IMAP4.error` family (a NO or BAD answer, a lost connection, a
read-only mailbox, a missing capability...), and underneath it sockets and TLS raise `OSError`s
(a timeout, a reset, a certificate) and `EOFError`. `LIBRARY_ERRORS` is every one of them; the
pool catches exactly these around each operation and raises `explain(...)` instead, so no raw
library exception (or raw server text on its own) reaches a tool. The message says what failed,
while doing what, and what to do; a timeout names IMAP_TIMEOUT and how long was waited.
"""

from __future__ import annotations

import imaplib
import ssl
from collections.abc import Callable

from imapclient.exceptions import CapabilityError, IllegalStateError, InvalidCriteriaError, LoginError, ProtocolError

from ..config import ImapSettings
from ..errors import MailboxError
from .answers import server_text
from .connection import MailboxUnavailable

#: what imapclient, imaplib, sockets and TLS raise during an IMAP call
LIBRARY_ERRORS: tuple[type[Exception], ...] = (imaplib.IMAP4.error, OSError, EOFError)

Explainer = Callable[[BaseException, ImapSettings, str], MailboxError]


def _timeout(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    return MailboxError(
        f"The IMAP server {settings.host} did not answer within IMAP_TIMEOUT ({settings.timeout:g} seconds) while "
        f"{doing}. Try again; if it keeps happening, ask for less at once (a smaller page, fewer ids) or raise "
        "IMAP_TIMEOUT."
    )


def _tls(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    reason = getattr(exc, "reason", None) or type(exc).__name__
    return MailboxError(
        f"The TLS connection to the IMAP server {settings.host} failed while {doing} ({reason}). Try again; if it "
        "keeps failing, check IMAP_TLS and IMAP_CA_FILE."
    )


def _read_only(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    return MailboxError(
        f"The IMAP server {settings.host} made the mailbox read-only while {doing} (another client may hold it). "
        "Try again later."
    )


def _lost(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    return MailboxError(
        f"The connection to the IMAP server {settings.host} was lost while {doing} ({type(exc).__name__}); try again."
    )


def _login(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    return MailboxUnavailable(
        f"The IMAP server {settings.host} refused the login for {settings.username!r}; check IMAP_USERNAME and "
        "IMAP_PASSWORD."
    )


def _capability(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    return MailboxError(
        f"The IMAP server {settings.host} lacks what is needed for {doing} ({server_text(exc)}); this account's "
        "server cannot do it."
    )


def _unexpected(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    return MailboxError(
        f"The IMAP server {settings.host} answered in a way imap-mcp did not expect while {doing} "
        f"({type(exc).__name__}: {server_text(exc)}). Try again; if it keeps happening, report it."
    )


def _refused(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    return MailboxError(
        f"The IMAP server refused the request while {doing} ({server_text(exc)}). Check the arguments (mailbox "
        "names exactly as list_mailboxes gives them, ids as a tool returned them) and try again; if it keeps "
        "refusing, the server does not allow this for this account."
    )


#: most specific first: `IMAP4.readonly` is an `IMAP4.abort`, which is an `IMAP4.error`; `ssl.SSLError` an `OSError`
EXPLAINERS: tuple[tuple[type[BaseException], Explainer], ...] = (
    (TimeoutError, _timeout),
    (ssl.SSLError, _tls),
    (imaplib.IMAP4.readonly, _read_only),
    (imaplib.IMAP4.abort, _lost),
    (EOFError, _lost),
    (OSError, _lost),
    (LoginError, _login),
    (CapabilityError, _capability),
    (InvalidCriteriaError, _unexpected),
    (IllegalStateError, _unexpected),
    (ProtocolError, _unexpected),
    (imaplib.IMAP4.error, _refused),
)


def explain(exc: BaseException, settings: ImapSettings, doing: str) -> MailboxError:
    """The `MailboxError` for `exc`, raised while `doing` (e.g. "reading the mailbox 'INBOX'")."""
    for kind, explainer in EXPLAINERS:
        if isinstance(exc, kind):
            return explainer(exc, settings, doing)
    raise TypeError(f"no message for {type(exc).__name__}: add it to EXPLAINERS") from exc
