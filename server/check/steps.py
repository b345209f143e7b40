"""The steps every connection check shares: one `Step` per line, and DNS, TCP and the TLS handshake.

A step that fails ends the check of that server (nothing after it can work) and names the
setting to fix. `Endpoint` says which settings describe the server (`IMAP_*` or `SMTP_*`), so
every message names the right variable. No step ever puts a password in its text.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from imap_mcp.protocol.errors import ImapMcpError

from ..config import TlsMode
from ..oauth.settings import OAuthSettings
from ..tls import tls_context

Outcome = Literal["ok", "warn", "fail"]
T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    """One line of the check: what was tried, how it went, and (when not ok) what to do."""

    name: str
    outcome: Outcome
    detail: str

    @property
    def line(self) -> str:
        return f"{self.outcome:<4}  {self.name:<18} {self.detail}"


class StepFailed(ImapMcpError):
    """A step failed; `step` is its line."""

    def __init__(self, step: Step) -> None:
        super().__init__(step.detail)
        self.step = step


@dataclass(frozen=True)
class Endpoint:
    """A server to check: `prefix` is IMAP or SMTP, the first word of each of its settings."""

    prefix: str
    host: str
    port: int
    tls: TlsMode
    ca_file: Path | None
    timeout: float

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def setting(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def step(self, name: str) -> str:
        return f"{self.prefix} {name}"

    def fail(self, name: str, detail: str) -> StepFailed:
        return StepFailed(Step(self.step(name), "fail", detail))

    def timed_out(self, name: str, waiting_for: str) -> StepFailed:
        return self.fail(
            name,
            f"no answer from {self.where} within {self.setting('TIMEOUT')}={self.timeout:g} s while waiting for "
            f"{waiting_for}: check {self.setting('HOST')} and {self.setting('PORT')} (is it the right server and "
            f"port?), or raise {self.setting('TIMEOUT')} for a slow server.",
        )

    def tls_failed(self, name: str, exc: ssl.SSLError) -> StepFailed:
        """A failed handshake: an untrusted certificate, or a port that does not speak TLS as configured."""
        if isinstance(exc, ssl.SSLCertVerificationError):
            return self.fail(
                name,
                f"the certificate of {self.host} is not trusted ({exc.verify_message}): set "
                f"{self.setting('CA_FILE')} to the PEM file of the CA that signed it (for a self-signed "
                "certificate, the certificate itself).",
            )
        if self.tls == "implicit":
            advice = (
                f"{self.where} does not speak implicit TLS; for a port that starts in plain text (usually 143 or "
                f"587) set {self.setting('TLS')}=starttls, or set {self.setting('PORT')} to the implicit-TLS port "
                "(usually 993 or 465)."
            )
        else:
            advice = f"check {self.setting('TLS')} and {self.setting('PORT')}."
        return self.fail(name, f"the TLS handshake with {self.where} failed ({exc.reason or exc}): {advice}")

    def attempt(self, name: str, waiting_for: str, action: Callable[[], T]) -> T:
        """`action()`, with its timeouts and TLS failures turned into this endpoint's failed step."""
        try:
            return action()
        except TimeoutError:
            raise self.timed_out(name, waiting_for) from None
        except ssl.SSLError as exc:
            raise self.tls_failed(name, exc) from None


def resolve(endpoint: Endpoint) -> Step:
    try:
        found = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise endpoint.fail(
            "DNS", f"cannot resolve {endpoint.host!r} ({reason}): check {endpoint.setting('HOST')}."
        ) from None
    addresses = sorted({str(info[4][0]) for info in found})
    return Step(endpoint.step("DNS"), "ok", f"{endpoint.host} is {', '.join(addresses[:4])}")


def open_tcp(endpoint: Endpoint) -> socket.socket:
    try:
        return endpoint.attempt(
            "TCP",
            "the TCP connection",
            lambda: socket.create_connection((endpoint.host, endpoint.port), timeout=endpoint.timeout),
        )
    except ConnectionRefusedError:
        raise endpoint.fail(
            "TCP",
            f"{endpoint.where} refused the connection (nothing listens on that port): check "
            f"{endpoint.setting('PORT')} and {endpoint.setting('HOST')}.",
        ) from None
    except OSError as exc:
        raise endpoint.fail(
            "TCP",
            f"cannot connect to {endpoint.where} ({exc.strerror or exc}): check {endpoint.setting('HOST')} and "
            f"{endpoint.setting('PORT')}, and the network between here and there.",
        ) from None


def reach(endpoint: Endpoint) -> list[Step]:
    """DNS, TCP and, for implicit TLS, the handshake: each a step (`StepFailed` at the first that fails)."""
    steps = [resolve(endpoint)]
    connection = open_tcp(endpoint)
    try:
        steps.append(Step(endpoint.step("TCP"), "ok", f"{endpoint.where} accepts connections"))
        if endpoint.tls == "implicit":
            steps.append(handshake(endpoint, connection))
    finally:
        connection.close()
    return steps


def handshake(endpoint: Endpoint, connection: socket.socket) -> Step:
    context = tls_context(endpoint.ca_file)
    wrapped = endpoint.attempt(
        "TLS",
        "the TLS handshake",
        lambda: context.wrap_socket(connection, server_hostname=endpoint.host),
    )
    version = wrapped.version()
    wrapped.close()
    return tls_ok(endpoint, version)


def tls_ok(endpoint: Endpoint, version: str | None) -> Step:
    trusted = f"trusted through {endpoint.setting('CA_FILE')}" if endpoint.ca_file else "trusted by the system"
    how = "implicit TLS" if endpoint.tls == "implicit" else "STARTTLS"
    return Step(endpoint.step("TLS"), "ok", f"{how}, {version or 'TLS'}, certificate {trusted}")


def no_tls(endpoint: Endpoint) -> Step:
    return Step(
        endpoint.step("TLS"),
        "ok",
        f"off ({endpoint.setting('TLS')}=none, accepted only for a loopback {endpoint.setting('HOST')})",
    )


def oauth_identity(mechanism: str, username: str, oauth: OAuthSettings) -> str:
    """How an OAuth login went in, without a token: the mechanism, the identity, and whose token it was."""
    return (
        f"OAuth 2.0 with SASL {mechanism} as {username!r} (access token for client {oauth.client_id!r} "
        f"from {oauth.token_url})"
    )
