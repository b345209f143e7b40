"""Checking the SMTP settings for real: reach the submission server, TLS, and AUTH. Nothing is sent."""

from __future__ import annotations

import contextlib
import smtplib
import ssl

from ..config import SmtpSettings
from ..oauth.errors import OAuthError
from ..outgoing.smtp import log_in
from .steps import Endpoint, Step, StepFailed, Steps, greeted, no_tls, oauth_identity, reach, tls_ok


def smtp_endpoint(settings: SmtpSettings) -> Endpoint:
    return Endpoint("SMTP", settings.host, settings.port, settings.tls, settings.ca_file, settings.timeout)


def smtp_steps(settings: SmtpSettings) -> Steps:
    """The SMTP steps to try, in order."""
    return Steps(smtp_endpoint(settings).planned(("AUTH",)))


def check_smtp(settings: SmtpSettings, steps: Steps) -> None:
    """Every SMTP step, each line added to `steps` as it is done; one fails when mail cannot be sent."""
    endpoint = smtp_endpoint(settings)
    try:
        reach(endpoint, steps)
        connection = _greeted(endpoint)
        try:
            steps.add(greeted(endpoint, "SMTP"))
            if settings.tls == "starttls":
                steps.add(_starttls(endpoint, connection))
            elif settings.tls == "none":
                steps.add(no_tls(endpoint))
            steps.add(_auth(endpoint, settings, connection))
        finally:
            with contextlib.suppress(smtplib.SMTPException, OSError):  # only saying goodbye
                connection.quit()
            connection.close()
    except StepFailed as failed:
        steps.add(failed.step)
    except (smtplib.SMTPException, OSError) as exc:
        steps.fail(f"{endpoint.where} failed ({type(exc).__name__}): check SMTP_HOST, SMTP_PORT and SMTP_TLS.")


def _greeted(endpoint: Endpoint) -> smtplib.SMTP:
    context = endpoint.context() if endpoint.tls == "implicit" else None

    def connect() -> smtplib.SMTP:
        if context is not None:
            return smtplib.SMTP_SSL(endpoint.host, endpoint.port, timeout=endpoint.timeout, context=context)
        return smtplib.SMTP(endpoint.host, endpoint.port, timeout=endpoint.timeout)

    try:
        connection = endpoint.attempt("greeting", "the SMTP greeting", connect)
        endpoint.attempt("greeting", "the answer to EHLO", connection.ehlo_or_helo_if_needed)
        return connection
    except (smtplib.SMTPException, OSError) as exc:
        raise endpoint.no_greeting("the SMTP greeting", exc) from None


def _starttls(endpoint: Endpoint, connection: smtplib.SMTP) -> Step:
    if not connection.has_extn("starttls"):
        raise endpoint.fail(
            "TLS",
            f"{endpoint.where} does not offer STARTTLS: set SMTP_TLS=implicit with its TLS port (usually 465).",
        )
    context = endpoint.context()
    endpoint.attempt("TLS", "the STARTTLS handshake", lambda: connection.starttls(context=context))
    endpoint.attempt("TLS", "the answer to EHLO", connection.ehlo)
    sock = connection.sock
    return tls_ok(endpoint, sock.version() if isinstance(sock, ssl.SSLSocket) else None)


def _auth(endpoint: Endpoint, settings: SmtpSettings, connection: smtplib.SMTP) -> Step:
    """AUTH exactly as a send does it (`outgoing.smtp.log_in`): a password where offered, or OAuth's SASL login."""
    if settings.oauth is None and not connection.has_extn("auth"):
        return Step("SMTP AUTH", "ok", f"{endpoint.where} offers no AUTH: mail is handed over without a login")
    try:
        used = endpoint.attempt("AUTH", "the answer to AUTH", lambda: log_in(connection, settings))
    except smtplib.SMTPAuthenticationError:
        raise endpoint.fail(
            "AUTH",
            f"{endpoint.where} refused the login for {settings.username!r}: check SMTP_USERNAME and SMTP_PASSWORD "
            "(they default to IMAP_USERNAME and IMAP_PASSWORD).",
        ) from None
    except OAuthError as exc:
        raise endpoint.fail("AUTH", str(exc)) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise endpoint.fail(
            "AUTH", f"AUTH failed ({type(exc).__name__}): check SMTP_TLS (many servers offer AUTH only over TLS)."
        ) from None
    if settings.oauth is None or used is None:
        return Step("SMTP AUTH", "ok", f"login as {settings.username!r} accepted")
    return Step("SMTP AUTH", "ok", f"{oauth_identity(used, settings.username, settings.oauth)} accepted")
