"""Handing a message to the SMTP submission server: implicit TLS, STARTTLS, or none on loopback.

AUTH is used whenever the server offers it (a loopback relay may not). Every failure becomes
`SendFailed` whose text names the server and the setting to check, never the password, the
subject or the body. `send` runs exactly once: nothing here retries.

A failure after the whole message (up to the final `.`) went to the server, with no answer to
it (the connection dropped or timed out), is `SendOutcomeUnknown`: the server may well have
taken the message, so the caller must not send it again.

The message is written to DATA piece by piece (`wire.Wire`), dots escaped as it goes, never as one
copy of the whole: smtplib's `send_message` would hold it twice more. MAIL FROM says its SIZE (and
BODY=8BITMIME when it has 8-bit text and the server takes that), so a server refuses a message too
large before any of it is sent; `size_limit` asks the server's limit before a person is asked.
"""

from __future__ import annotations

import copy
import smtplib
import ssl
from collections.abc import Iterable, Iterator, Sequence
from email.message import EmailMessage

from ..config import SmtpSettings
from ..errors import OutgoingError
from ..oauth.errors import OAuthError
from ..oauth.sasl import smtp_login
from ..tls import tls_context
from .wire import Payload, Wire


class SendFailed(OutgoingError):
    """The submission server could not be reached or did not take the message; the text says what to check."""


class SendOutcomeUnknown(SendFailed):
    """The whole message went to the server, but its answer never came: it may have been sent."""


class _Handover(smtplib.SMTP):
    """Remembers whether the whole message was written to the server (`_transmit` sets it after the final dot)."""

    handed_over = False


class _Smtp(_Handover, smtplib.SMTP):
    pass


class _SmtpSsl(_Handover, smtplib.SMTP_SSL):
    pass


def _where(settings: SmtpSettings) -> str:
    return f"{settings.host}:{settings.port} ({settings.tls} TLS)"


def _reply_text(code: int, text: bytes | str) -> str:
    """A server reply as one short line, e.g. `550 5.1.1 Recipient address rejected`."""
    decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return f"{code} {' '.join(decoded.split())[:200]}"


def _open(settings: SmtpSettings) -> _Smtp | _SmtpSsl:
    context = tls_context(settings.ca_file)
    if settings.tls == "implicit":
        return _SmtpSsl(settings.host, settings.port, timeout=settings.timeout, context=context)
    connection = _Smtp(settings.host, settings.port, timeout=settings.timeout)
    if settings.tls == "starttls":
        try:
            connection.starttls(context=context)
        except smtplib.SMTPNotSupportedError:
            connection.close()
            raise SendFailed(
                f"The SMTP server {_where(settings)} does not offer STARTTLS; nothing was sent. Check SMTP_TLS "
                "and SMTP_PORT (implicit TLS is usually port 465, STARTTLS port 587)."
            ) from None
    return connection


def log_in(connection: smtplib.SMTP, settings: SmtpSettings) -> str | None:
    """EHLO, then AUTH as the settings say; returns the OAuth SASL mechanism used, else None (a password login,
    or none where the server offers no AUTH). Raises smtplib's errors and `OAuthError` (`send` explains them)."""
    connection.ehlo_or_helo_if_needed()
    if settings.oauth is not None:
        return smtp_login(connection, settings.username, settings.oauth, settings.host, settings.port)
    if connection.has_extn("auth"):
        connection.login(settings.username, settings.password.reveal())
    return None


def dot_stuffed(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks` (CRLF lines) as DATA carries them: a dot that starts a line doubled, wherever the pieces are cut;
    the last line ended by CRLF."""
    at_line_start, tail = True, b"\r\n"
    for chunk in chunks:
        if not chunk:
            continue
        stuffed = chunk.replace(b"\n.", b"\n..")
        yield b"." + stuffed if at_line_start and chunk.startswith(b".") else stuffed
        at_line_start, tail = chunk.endswith(b"\n"), (tail + chunk[-2:])[-2:]
    if tail != b"\r\n":
        yield b"\r\n"


def _transmit(
    connection: _Smtp | _SmtpSsl, sender: str, wire: Wire, recipients: list[str]
) -> dict[str, tuple[int, bytes]]:
    """MAIL, RCPT for each recipient, DATA streamed: the recipients refused while the others took it."""
    options = [f"SIZE={wire.size}"] if connection.has_extn("size") else []
    if wire.eight_bit and connection.has_extn("8bitmime"):
        options.append("BODY=8BITMIME")
    code, answer = connection.mail(sender, options)
    if code != 250:
        raise smtplib.SMTPSenderRefused(code, answer, sender)
    refused: dict[str, tuple[int, bytes]] = {}
    for address in recipients:
        code, answer = connection.rcpt(address)
        if code not in (250, 251):
            refused[address] = (code, answer)
    if len(refused) == len(recipients):
        raise smtplib.SMTPRecipientsRefused(refused)
    code, answer = connection.docmd("DATA")
    if code != 354:
        raise smtplib.SMTPDataError(code, answer)
    for piece in dot_stuffed(wire.chunks()):
        connection.send(piece)
    connection.send(b".\r\n")
    connection.handed_over = True
    code, answer = connection.getreply()
    if code != 250:
        raise smtplib.SMTPDataError(code, answer)
    return refused


def _from_address(message: EmailMessage) -> str:
    addresses = getattr(message["From"], "addresses", ())
    return str(addresses[0].addr_spec) if addresses else ""


def _deliver(
    settings: SmtpSettings, message: EmailMessage, recipients: list[str], payloads: Sequence[Payload]
) -> dict[str, str]:
    outgoing = copy.copy(message)
    del outgoing["Bcc"]  # for the Sent copy only
    wire = Wire(outgoing, payloads)
    connection = _open(settings)
    try:
        log_in(connection, settings)
        refused = _transmit(connection, _from_address(message), wire, recipients)
    except smtplib.SMTPResponseException:
        raise  # the server answered: whatever it said is the outcome
    except OSError as exc:  # smtplib's errors are OSErrors too
        if connection.handed_over:
            raise SendOutcomeUnknown(
                f"The whole message went to the SMTP server {_where(settings)}, but its answer never came "
                f"({getattr(exc, 'strerror', None) or exc}): it was probably sent. It is not sent again by "
                "repeating this call; check with the recipients before sending it anew."
            ) from None
        raise
    finally:
        try:
            connection.quit()
        except (smtplib.SMTPException, OSError):
            connection.close()
    return {address: _reply_text(*answer) for address, answer in refused.items()}


def send(
    settings: SmtpSettings, message: EmailMessage, recipients: list[str], payloads: Sequence[Payload] = ()
) -> dict[str, str]:
    """Send `message` (with its attachments' `payloads` streamed in: `wire.Wire`) from its From address to
    `recipients` (to, cc and bcc); its Bcc header is not transmitted.

    Returns the recipients the server refused while taking the message for the others
    (address → server reply); raises `SendFailed` when it took the message for no one.
    """
    where = _where(settings)
    try:
        return _deliver(settings, message, recipients, payloads)
    except SendFailed:
        raise
    except OAuthError as exc:
        raise SendFailed(f"{exc} Nothing was sent.") from None
    except smtplib.SMTPAuthenticationError:
        raise SendFailed(
            f"The SMTP server {where} refused the login for {settings.username!r}; nothing was sent. Check "
            "SMTP_USERNAME and SMTP_PASSWORD (they default to IMAP_USERNAME and IMAP_PASSWORD)."
        ) from None
    except smtplib.SMTPRecipientsRefused as exc:
        refused = ", ".join(f"{a} ({_reply_text(*r)})" for a, r in exc.recipients.items())
        raise SendFailed(f"The SMTP server {where} refused every recipient: {refused}; nothing was sent.") from None
    except smtplib.SMTPSenderRefused as exc:
        answer = _reply_text(exc.smtp_code, exc.smtp_error)
        if exc.smtp_code == 552:
            raise SendFailed(
                f"The SMTP server {where} refused the message as too large ({answer}); nothing was sent. Send fewer "
                "or smaller attachments."
            ) from None
        raise SendFailed(
            f"The SMTP server {where} refused the sender {exc.sender!r} ({answer}); nothing was sent. "
            "Check SMTP_FROM: the server may only accept the account's own address."
        ) from None
    except smtplib.SMTPResponseException as exc:
        answer = _reply_text(exc.smtp_code, exc.smtp_error)
        raise SendFailed(f"The SMTP server {where} did not take the message ({answer}).") from None
    except ssl.SSLError as exc:
        raise SendFailed(
            f"TLS with the SMTP server {where} failed ({exc.reason or exc}); nothing was sent. Check SMTP_TLS, "
            "SMTP_PORT and SMTP_CA_FILE."
        ) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise SendFailed(
            f"Cannot send through the SMTP server {where}: {getattr(exc, 'strerror', None) or exc}. Check SMTP_HOST "
            "and SMTP_PORT, and that the server is running."
        ) from None


def size_limit(settings: SmtpSettings) -> int | None:
    """The largest message the server says it takes (EHLO SIZE), or None when it names no limit; `SendFailed` when it
    cannot be reached (asked before a person approves a message with attachments)."""
    try:
        connection = _open(settings)
        try:
            connection.ehlo_or_helo_if_needed()
            declared = connection.esmtp_features.get("size", "").strip()
        finally:
            connection.close()
    except SendFailed:
        raise
    except (smtplib.SMTPException, OSError) as exc:
        raise SendFailed(
            f"Cannot reach the SMTP server {_where(settings)} to learn its size limit: "
            f"{getattr(exc, 'strerror', None) or exc}. Check SMTP_HOST and SMTP_PORT, and that the server is running."
        ) from None
    return int(declared) if declared.isdigit() and int(declared) > 0 else None
