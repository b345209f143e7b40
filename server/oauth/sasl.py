"""SASL XOAUTH2 and OAUTHBEARER (RFC 7628) logins, with one retry on a fresh token: for SMTP here, and for
IMAP in `imap.connection` (which speaks IMAP; this module knows none of it).

A login the server refuses marks the token as rejected; the next one comes from a refresh and
is tried once. If the server refuses that one too, `LoginRefused` says what to check: no third try.
"""

from __future__ import annotations

import smtplib
from collections.abc import Callable
from typing import Protocol

from .errors import OAuthError
from .settings import Mechanism, OAuthSettings
from .tokens import token_source


class LoginRefused(OAuthError):
    """The server refused a freshly refreshed access token."""


class MechanismMissing(OAuthError):
    """The server offers neither XOAUTH2 nor OAUTHBEARER (or not the one IMAP_OAUTH_MECHANISM names)."""


def xoauth2_response(user: str, token: str) -> str:
    return f"user={user}\x01auth=Bearer {token}\x01\x01"


def oauthbearer_response(user: str, token: str, host: str, port: int) -> str:
    """The RFC 7628 client response: a GS2 header naming `user`, then host, port and the bearer token."""
    name = user.replace("=", "=3D").replace(",", "=2C")
    return f"n,a={name},\x01host={host}\x01port={port}\x01auth=Bearer {token}\x01\x01"


def choose_mechanism(setting: Mechanism, offered: set[str], server: str) -> str:
    """XOAUTH2 or OAUTHBEARER, as IMAP_OAUTH_MECHANISM asks and `offered` (upper case names) allows."""
    wanted = ("XOAUTH2", "OAUTHBEARER") if setting == "auto" else (setting.upper(),)
    for mechanism in wanted:
        if mechanism in offered:
            return mechanism
    raise MechanismMissing(
        f"The server {server} does not offer SASL {' or '.join(wanted)} (it offers "
        f"{', '.join(sorted(offered)) or 'no SASL mechanism'}); check IMAP_OAUTH_MECHANISM and the host."
    )


def _response(mechanism: str, user: str, token: str, host: str, port: int) -> str:
    return xoauth2_response(user, token) if mechanism == "XOAUTH2" else oauthbearer_response(user, token, host, port)


class SaslAnswer(Protocol):
    """What `smtplib.SMTP.auth` and imapclient's `authenticate` call: the response to a challenge (or to none)."""

    def __call__(self, challenge: bytes | None = None, /) -> str: ...


def _once_then_end(mechanism: str, response: str) -> SaslAnswer:
    """The client response once; to the server's error challenge that follows a refusal, the ending answer
    (RFC 7628 section 3.2.3: a single %x01 for OAUTHBEARER; XOAUTH2 servers take an empty one)."""
    sent = False

    def answer(_challenge: bytes | None = None) -> str:
        nonlocal sent
        if sent:
            return "\x01" if mechanism == "OAUTHBEARER" else ""
        sent = True
        return response

    return answer


def _with_retry(oauth: OAuthSettings, accepted: Callable[[str], bool], refused: str) -> None:
    """Log in with the current token; when the server refuses it, once more with a refreshed one."""
    source = token_source(oauth)
    token = source.access_token()
    if accepted(token):
        return
    source.rejected(token)
    if not accepted(source.access_token()):
        raise LoginRefused(refused)


def _refused_text(server: str, user: str, mechanism: str, user_setting: str) -> str:
    return (
        f"The server {server} refused the OAuth login ({mechanism}) for {user!r} even with a new access token; "
        f"check that {user_setting} is the signed-in account and that IMAP_OAUTH_SCOPE grants mail access."
    )


#: one login attempt with a mechanism and the answers to its challenges: True when the server accepted it
Attempt = Callable[[str, SaslAnswer], bool]


def login(
    offered: set[str], user: str, oauth: OAuthSettings, host: str, port: int, attempt: Attempt, user_setting: str
) -> str:
    """Log in over any protocol (`attempt` speaks it) with the mechanism the settings and `offered` (upper-case
    names) allow; returns the mechanism used. Raises `OAuthError` (`MechanismMissing`, `LoginRefused`, ...)."""
    mechanism = choose_mechanism(oauth.mechanism, offered, f"{host}:{port}")

    def accepted(token: str) -> bool:
        return attempt(mechanism, _once_then_end(mechanism, _response(mechanism, user, token, host, port)))

    _with_retry(oauth, accepted, _refused_text(f"{host}:{port}", user, mechanism, user_setting))
    return mechanism


def smtp_login(connection: smtplib.SMTP, user: str, oauth: OAuthSettings, host: str, port: int) -> str:
    """AUTH on an SMTP connection that has said EHLO; returns the mechanism used."""
    offered = {m.upper() for m in connection.esmtp_features.get("auth", "").split()}

    def attempt(mechanism: str, answer: SaslAnswer) -> bool:
        try:
            connection.auth(mechanism, answer)
        except smtplib.SMTPAuthenticationError:
            return False
        return True

    return login(offered, user, oauth, host, port, attempt, "SMTP_USERNAME")
