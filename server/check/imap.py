"""Checking the IMAP settings for real: reach the server, log in, and see what it offers.

After the login, three steps read what the tools need (`tools.registry`): the capabilities, the
mailboxes of the roles, and the flags INBOX keeps (`imap.kept_flags.said_kept`). Something missing
is a warning: the server still works, and the tool lines say which tools degrade or are refused
without it.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence

from imapclient import IMAPClient
from imapclient.exceptions import LoginError

from ..config import ImapSettings
from ..errors import MailboxError
from ..imap.connection import close, log_in
from ..imap.failures import LIBRARY_ERRORS, explain
from ..imap.kept_flags import said_kept
from ..imap.mailboxes import Role, list_mailboxes, missing_role_advice
from ..imap.permanent_flags import SETTABLE_SYSTEM_FLAGS, keeps
from ..imap.promptly import exchange_promptly
from ..oauth.errors import OAuthError
from ..tools.needs import Capability, KeptKeyword, RoleMailbox, ServerFacts
from ..tools.registry import TOOLS
from .steps import Endpoint, Step, StepFailed, Steps, greeted, no_tls, oauth_identity, reach, tls_ok

#: the capabilities the tools use (one of several, where any will do), in the order the registry names them
CAPABILITIES = tuple(
    dict.fromkeys(
        need.requirement for spec in TOOLS for need in spec.requires if isinstance(need.requirement, Capability)
    )
)
#: the mailbox roles the tools need
ROLES: tuple[Role, ...] = tuple(
    dict.fromkeys(
        need.requirement.role for spec in TOOLS for need in spec.requires if isinstance(need.requirement, RoleMailbox)
    )
)
#: the steps after the greeting and the TLS step
AFTER_LOGIN = ("capabilities", "mailboxes", "keywords")


def imap_endpoint(settings: ImapSettings) -> Endpoint:
    return Endpoint("IMAP", settings.host, settings.port, settings.tls, settings.ca_file, settings.timeout)


def imap_steps(settings: ImapSettings, more: Sequence[str] = ()) -> Steps:
    """The IMAP steps to try, in order; `more`: the names of steps that follow them (the write test's)."""
    return Steps([*imap_endpoint(settings).planned(("login", *AFTER_LOGIN)), *more])


def check_imap(settings: ImapSettings, steps: Steps) -> ServerFacts | None:
    """Every IMAP step up to the flags INBOX keeps, each line added to `steps` as it is done; what the server
    showed of what the tools need, or None when a step failed."""
    endpoint = imap_endpoint(settings)
    try:
        reach(endpoint, steps)
        client = _greeted(endpoint, steps)
        try:
            if settings.tls == "starttls":
                steps.add(_starttls(endpoint, client))
            elif settings.tls == "none":
                steps.add(no_tls(endpoint))
            steps.add(_login(endpoint, settings, client))
            return _facts(client, steps)
        finally:
            close(client)
    except StepFailed as failed:
        steps.add(failed.step)
    except LIBRARY_ERRORS as exc:
        steps.fail(str(explain(exc, settings, f"trying the step {steps.current}")))
    except MailboxError as exc:
        steps.fail(str(exc))
    return None


def _greeted(endpoint: Endpoint, steps: Steps) -> IMAPClient:
    implicit = endpoint.tls == "implicit"
    context = endpoint.context() if implicit else None

    def connect() -> IMAPClient:
        client = IMAPClient(
            endpoint.host, port=endpoint.port, ssl=implicit, ssl_context=context, timeout=endpoint.timeout
        )
        exchange_promptly(client)
        return client

    try:
        client = endpoint.attempt("greeting", "the IMAP greeting", connect)
    except LIBRARY_ERRORS as exc:
        raise endpoint.no_greeting("the IMAP greeting", exc) from None
    steps.add(greeted(endpoint, "IMAP"))
    return client


def _starttls(endpoint: Endpoint, client: IMAPClient) -> Step:
    if not client.has_capability("STARTTLS"):
        raise endpoint.fail(
            "TLS",
            f"{endpoint.where} does not offer STARTTLS: set IMAP_TLS=implicit with its TLS port (usually 993).",
        )
    context = endpoint.context()
    endpoint.attempt("TLS", "the STARTTLS handshake", lambda: client.starttls(context))
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


def _facts(client: IMAPClient, steps: Steps) -> ServerFacts:
    capabilities = frozenset(c.decode("ascii", "replace").upper() for c in client.capabilities())
    steps.add(capabilities_step(capabilities))
    roles = _roles(client)
    steps.add(mailboxes_step(client, roles))
    read_only, kept = said_kept(client, "INBOX")
    steps.add(keywords_step(read_only, kept))
    return ServerFacts(capabilities, frozenset(roles), frozenset() if read_only else kept)


def capabilities_step(offered: frozenset[str]) -> Step:
    """The capabilities the tools use that are offered; a warning naming those missing (an alternative to one
    that is offered is not: XLIST where SPECIAL-USE is)."""
    facts = ServerFacts(offered, frozenset(), None)
    names = dict.fromkeys(name for capability in CAPABILITIES for name in capability.names)
    unmet = {name for capability in CAPABILITIES if not capability.met(facts) for name in capability.names}
    present = " ".join(name for name in names if name in offered) or "none of them"
    missing = " ".join(name for name in names if name in unmet)
    if not missing:
        return Step("IMAP capabilities", "ok", present)
    return Step(
        "IMAP capabilities",
        "warn",
        f"offered: {present}; missing: {missing} (the tool lines below say what changes without them)",
    )


def _roles(client: IMAPClient) -> dict[Role, str]:
    """The first selectable mailbox of each role, INBOX aside."""
    found: dict[Role, str] = {}
    for mailbox in list_mailboxes(client):
        if mailbox.selectable and mailbox.role not in ("none", "inbox"):
            found.setdefault(mailbox.role, mailbox.name)
    return found


def mailboxes_step(client: IMAPClient, found: dict[Role, str]) -> Step:
    """The mailboxes found for each role (Trash, Sent, Drafts, then Junk, Archive, ...); a warning naming each role
    the tools need that is missing, with what to create, named as this server expects."""
    ordered = [*[role for role in ROLES if role in found], *[role for role in found if role not in ROLES]]
    listed = ", ".join(f"{role.title()} = {found[role]!r}" for role in ordered) or "no mailbox with a role"
    missing = [role for role in ROLES if role not in found]
    if not missing:
        return Step("IMAP mailboxes", "ok", listed)
    advice = " ".join(f"No {role.title()} mailbox: {missing_role_advice(client, role)}" for role in missing)
    return Step("IMAP mailboxes", "warn", f"{listed}. {advice}")


def keywords_step(read_only: bool, kept: frozenset[bytes] | None) -> Step:
    """What INBOX keeps, read by `imap.permanent_flags.keeps` as the tools read it: new keywords, and which of
    the system flags set_message_flags sets are not kept (not listed in PERMANENTFLAGS, `\\*` or not)."""
    if read_only:
        return Step("IMAP keywords", "warn", "INBOX is read-only for this login: it keeps no flag set here")
    new_keywords = KeptKeyword().met(ServerFacts(frozenset(), frozenset(), kept))
    not_kept = [flag for flag in SETTABLE_SYSTEM_FLAGS if not keeps(kept, flag)]
    if new_keywords and not not_kept:
        said = "PERMANENTFLAGS not given: every flag, RFC 3501" if kept is None else "PERMANENTFLAGS has \\*"
        return Step("IMAP keywords", "ok", f"INBOX keeps new keywords ({said})")
    shown = " ".join(sorted(flag.decode("ascii", "replace") for flag in kept or ())) or "none"
    keywords = "new keywords" if new_keywords else "no new keyword"
    flags = f"; not {', '.join(not_kept)}" if not_kept else ""
    return Step("IMAP keywords", "warn", f"INBOX keeps {keywords}{flags} (PERMANENTFLAGS: {shown})")
