"""Checking the IMAP settings for real: reach the server, log in, and see what it offers.

Capabilities and mailbox roles that are missing are warnings: the server still works, and the
line says which tools will not (or will work differently).
"""

from __future__ import annotations

import ssl

from imapclient import IMAPClient
from imapclient.exceptions import LoginError

from ..config import ImapSettings
from ..errors import MailboxError
from ..imap.connection import close, log_in
from ..imap.failures import LIBRARY_ERRORS, explain
from ..imap.mailboxes import Role, list_mailboxes, missing_role_advice
from ..oauth.errors import OAuthError
from ..tls import tls_context
from .steps import Endpoint, Step, StepFailed, no_tls, oauth_identity, reach, tls_ok

#: the capabilities that matter, and what changes without each
CAPABILITIES = {
    "MOVE": "moves copy, then expunge exactly the moved messages (needs UIDPLUS)",
    "UIDPLUS": "permanent deletes are refused, and so are moves when MOVE is missing too; concurrent "
    "retries of one send are not excluded",
    "SORT": "search sorts by date in imap-mcp, fetching the dates of every match",
    "SPECIAL-USE": "mailbox roles (Sent, Trash, Drafts) may be unknown",
    "CONDSTORE": "search results are not cached: every page searches again",
}
#: the mailbox roles that matter, and what does not work without each
ROLES: dict[Role, str] = {
    "trash": "delete_messages can only delete permanently",
    "sent": "send_message and reply_to_message refuse (they keep their record in Sent)",
    "drafts": "save_draft refuses",
}


def imap_endpoint(settings: ImapSettings) -> Endpoint:
    return Endpoint("IMAP", settings.host, settings.port, settings.tls, settings.ca_file, settings.timeout)


def check_imap(settings: ImapSettings) -> list[Step]:
    """Every IMAP step, in order; the last one failed when the server cannot be used."""
    endpoint = imap_endpoint(settings)
    steps: list[Step] = []
    try:
        steps += reach(endpoint)
        client = _greeted(endpoint)
        try:
            if settings.tls == "starttls":
                steps.append(_starttls(endpoint, client))
            elif settings.tls == "none":
                steps.append(no_tls(endpoint))
            steps.append(_login(endpoint, settings, client))
            steps.append(capabilities_step(client))
            steps += mailbox_steps(client)
        finally:
            close(client)
    except StepFailed as failed:
        steps.append(failed.step)
    except LIBRARY_ERRORS as exc:
        steps.append(_session_failed(explain(exc, settings, "asking for its capabilities and mailboxes")))
    except MailboxError as exc:
        steps.append(_session_failed(exc))
    return steps


def _session_failed(exc: MailboxError) -> Step:
    return Step("IMAP session", "fail", f"after the login: {exc}")


def _greeted(endpoint: Endpoint) -> IMAPClient:
    implicit = endpoint.tls == "implicit"

    def connect() -> IMAPClient:
        return IMAPClient(
            endpoint.host,
            port=endpoint.port,
            ssl=implicit,
            ssl_context=tls_context(endpoint.ca_file) if implicit else None,
            timeout=endpoint.timeout,
        )

    try:
        return endpoint.attempt("greeting", "the IMAP greeting", connect)
    except LIBRARY_ERRORS as exc:
        raise endpoint.fail(
            "greeting",
            f"{endpoint.where} did not greet as an IMAP server ({type(exc).__name__}): check IMAP_HOST, "
            "IMAP_PORT and IMAP_TLS.",
        ) from None


def _starttls(endpoint: Endpoint, client: IMAPClient) -> Step:
    if not client.has_capability("STARTTLS"):
        raise endpoint.fail(
            "TLS",
            f"{endpoint.where} does not offer STARTTLS: set IMAP_TLS=implicit with its TLS port (usually 993).",
        )
    endpoint.attempt("TLS", "the STARTTLS handshake", lambda: client.starttls(tls_context(endpoint.ca_file)))
    connection = client.socket()
    return tls_ok(endpoint, connection.version() if isinstance(connection, ssl.SSLSocket) else None)


def _login(endpoint: Endpoint, settings: ImapSettings, client: IMAPClient) -> Step:
    """LOGIN, or the SASL login of OAuth, exactly as `connect` logs in (`imap.connection.log_in`)."""
    command = "LOGIN" if settings.oauth is None else "AUTHENTICATE"
    try:
        used = endpoint.attempt("login", f"the answer to {command}", lambda: log_in(client, settings))
    except LoginError:
        raise endpoint.fail(
            "login",
            f"{endpoint.where} refused the login for {settings.username!r}: check IMAP_USERNAME and IMAP_PASSWORD.",
        ) from None
    except OAuthError as exc:
        raise endpoint.fail("login", str(exc)) from None
    except LIBRARY_ERRORS as exc:
        raise endpoint.fail(
            "login", f"{command} failed ({type(exc).__name__}): check IMAP_TLS (the server may refuse it without TLS)."
        ) from None
    if settings.oauth is None:
        return Step("IMAP login", "ok", f"LOGIN as {settings.username!r} accepted")
    return Step("IMAP login", "ok", f"{oauth_identity(used, settings.username, settings.oauth)} accepted")


def capabilities_step(client: IMAPClient) -> Step:
    offered = {c.decode("ascii", "replace").upper() for c in client.capabilities()}
    missing = [name for name in CAPABILITIES if name not in offered]
    if not missing:
        return Step("IMAP capabilities", "ok", " ".join(CAPABILITIES))
    effects = "; ".join(f"without {name}, {CAPABILITIES[name]}" for name in missing)
    present = " ".join(name for name in CAPABILITIES if name in offered) or "none of them"
    return Step("IMAP capabilities", "warn", f"offered: {present}; {effects}.")


def mailbox_steps(client: IMAPClient) -> list[Step]:
    """One line for the mailboxes found for each role (Trash, Sent, Drafts, then Junk, Archive, ...), one per
    role that matters and is missing (with what to create, named as this server expects)."""
    found: dict[Role, str] = {}
    for mailbox in list_mailboxes(client):
        if mailbox.selectable and mailbox.role not in ("none", "inbox"):
            found.setdefault(mailbox.role, mailbox.name)
    steps = [_missing_role(client, role, without) for role, without in ROLES.items() if role not in found]
    if found:
        ordered = [*[role for role in ROLES if role in found], *[role for role in found if role not in ROLES]]
        listed = ", ".join(f"{role.title()} = {found[role]!r}" for role in ordered)
        steps.insert(0, Step("IMAP mailboxes", "ok", listed))
    return steps


def _missing_role(client: IMAPClient, role: Role, without: str) -> Step:
    name = role.title()
    return Step(f"IMAP {name}", "warn", f"no {name} mailbox: {without}. {missing_role_advice(client, role)}")
