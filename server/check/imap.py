"""Checking the IMAP settings for real: reach the server, log in, and see what it offers.

Capabilities and mailbox roles that are missing are warnings: the server still works, and the
line says which tools will not (or will work differently).
"""

from __future__ import annotations

import imaplib
import ssl
from collections.abc import Callable

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError, LoginError

from imap_mcp.server.changes.flags_drafts import drafts_mailbox
from imap_mcp.server.changes.messages import ChangeRefused, trash_mailbox
from imap_mcp.server.check.steps import Endpoint, Step, StepFailed, no_tls, reach, tls_ok
from imap_mcp.server.config import ImapSettings
from imap_mcp.server.imap.connection import close
from imap_mcp.server.imap.mailboxes import list_mailboxes
from imap_mcp.server.outgoing.sent_mailbox import NoSentMailbox, sent_mailbox
from imap_mcp.server.tls import tls_context

#: the capabilities that matter, and what changes without each
CAPABILITIES = {
    "MOVE": "moves copy, then expunge exactly the moved messages (needs UIDPLUS)",
    "UIDPLUS": "permanent deletes are refused, and so are moves when MOVE is missing too; concurrent "
    "retries of one send are not excluded",
    "SORT": "search sorts by date in imap-mcp, fetching the dates of every match",
    "SPECIAL-USE": "mailbox roles (Sent, Trash, Drafts) may be unknown",
    "CONDSTORE": "search results are not cached: every page searches again",
}
#: the mailbox roles that matter: how to find one, and what does not work without it
ROLES: dict[str, tuple[Callable[[IMAPClient], str], str]] = {
    "Trash": (trash_mailbox, "delete_messages can only delete permanently"),
    "Sent": (sent_mailbox, "send_message and reply_to_message refuse (they keep their record in Sent)"),
    "Drafts": (drafts_mailbox, "save_draft refuses"),
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
    except (IMAPClientError, imaplib.IMAP4.error, OSError) as exc:
        steps.append(
            Step(
                "IMAP session",
                "fail",
                f"the connection to {endpoint.where} failed after LOGIN ({type(exc).__name__}): run the check again; "
                "if it repeats, the server drops sessions (or answers slower than IMAP_TIMEOUT).",
            )
        )
    return steps


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
    except (IMAPClientError, imaplib.IMAP4.error, OSError) as exc:
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
    try:
        endpoint.attempt(
            "login", "the answer to LOGIN", lambda: client.login(settings.username, settings.password.reveal())
        )
    except LoginError:
        raise endpoint.fail(
            "login",
            f"{endpoint.where} refused the login for {settings.username!r}: check IMAP_USERNAME and IMAP_PASSWORD.",
        ) from None
    except (IMAPClientError, imaplib.IMAP4.error, OSError) as exc:
        raise endpoint.fail(
            "login", f"LOGIN failed ({type(exc).__name__}): check IMAP_TLS (the server may refuse LOGIN without TLS)."
        ) from None
    return Step("IMAP login", "ok", f"LOGIN as {settings.username!r} accepted")


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
    role that matters and is missing."""
    found: dict[str, str] = {}
    steps = []
    for role, (find, without) in ROLES.items():
        try:
            found[role] = find(client)
        except (ChangeRefused, NoSentMailbox):
            steps.append(Step(f"IMAP {role}", "warn", f"no {role} mailbox: {without}."))
    for mailbox in list_mailboxes(client):
        role = mailbox.role.capitalize()
        if mailbox.role not in ("none", "inbox") and role not in found:
            found[role] = mailbox.name
    if found:
        listed = ", ".join(f"{role} = {name!r}" for role, name in found.items())
        steps.insert(0, Step("IMAP mailboxes", "ok", listed))
    return steps
