"""The steps every connection check shares: one `Step` per line, and DNS, TCP and the TLS handshake.

A server's steps are known before the first is tried (`Steps`): each one tried prints its line,
and when one fails (nothing after it can work; its line names the setting to fix) the rest are
printed as "not tried", so the output always shows every step, in order. `Endpoint` says which
settings describe the server (`IMAP_*` or `SMTP_*`), so every message names the right variable. No
step ever puts a password in its text.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from imap_mcp.protocol.errors import ImapMcpError

from ..config import TlsMode
from ..imap.tls_mismatch import GREETING_GRACE, answers_tls, greets_within, implicit_port_advice
from ..oauth.settings import OAuthSettings
from ..tls import tls_context
from ..tools.needs import Verdict

#: a step's outcome: done; done with something missing (it says what changes); failed; not tried (an earlier
#: step failed). A tool's line has a `Verdict` instead.
Outcome = Literal["ok", "warn", "fail", "skip"]
T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    """One line of the check: what was tried (or which tool), how it went, and (when not ok) what to do."""

    name: str
    outcome: Outcome | Verdict
    detail: str
    #: the width of the name's column
    column: int = 18

    @property
    def line(self) -> str:
        return f"{self.outcome:<8}  {self.name:<{self.column}} {self.detail}".rstrip()


class StepFailed(ImapMcpError):
    """A step failed; `step` is its line."""

    def __init__(self, step: Step) -> None:
        super().__init__(step.detail)
        self.step = step


class Steps:
    """The lines of one server's steps, whose names (`planned`) are known before the first is tried."""

    def __init__(self, planned: Sequence[str]) -> None:
        self.planned = tuple(planned)
        self.done: list[Step] = []

    @property
    def current(self) -> str:
        """The name of the step being tried: the first planned one without a line."""
        return self.planned[len(self.done)]

    def add(self, step: Step) -> None:
        """The line of the step being tried (a bug if it is another step: the plan would not be the output)."""
        if step.name != self.current:
            raise ValueError(f"step {step.name!r} out of order: {self.current!r} comes first")
        self.done.append(step)

    def fail(self, detail: str) -> None:
        """The step being tried failed for a reason its own code did not foresee."""
        self.add(Step(self.current, "fail", detail))

    @property
    def failed(self) -> Step | None:
        return next((step for step in self.done if step.outcome == "fail"), None)

    def lines(self) -> list[Step]:
        """Every planned step: those tried, then (after a failure) the others, not tried."""
        failed = self.failed
        why = f"not tried: {failed.name} failed" if failed else "not tried"
        return [*self.done, *(Step(name, "skip", why) for name in self.planned[len(self.done) :])]


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

    def planned(self, after_tcp: Sequence[str]) -> list[str]:
        """The names of this server's steps: DNS, TCP, the TLS handshake and the greeting in the order this TLS mode
        does them (implicit TLS before the greeting, STARTTLS after it), then `after_tcp`."""
        tls_then_greeting = ["TLS", "greeting"] if self.tls == "implicit" else ["greeting", "TLS"]
        return [self.step(name) for name in ("DNS", "TCP", *tls_then_greeting, *after_tcp)]

    def fail(self, name: str, detail: str) -> StepFailed:
        return StepFailed(Step(self.step(name), "fail", detail))

    def timed_out(self, name: str, waiting_for: str) -> StepFailed:
        return self.fail(
            name,
            f"no answer from {self.where} within {self.setting('TIMEOUT')}={self.timeout:g} s while waiting for "
            f"{waiting_for}: check {self.setting('HOST')} and {self.setting('PORT')} (is it the right server and "
            f"port?), or raise {self.setting('TIMEOUT')} for a slow server.",
        )

    def context(self) -> ssl.SSLContext:
        """The TLS context for this server; a failed TLS step when its CA file cannot be used."""
        try:
            return tls_context(self.ca_file)
        except ssl.SSLError as exc:
            raise self.fail(
                "TLS",
                f"{self.setting('CA_FILE')}={str(self.ca_file)!r} holds no certificate imap-mcp can read "
                f"({exc.reason or exc}): it must be a PEM file (text starting with -----BEGIN CERTIFICATE-----). "
                "Convert a DER file with `openssl x509 -inform der -in CA.der -out CA.pem`.",
            ) from None
        except OSError as exc:
            raise self.fail(
                "TLS",
                f"{self.setting('CA_FILE')}={str(self.ca_file)!r} cannot be read ({exc.strerror or exc}): make it "
                "readable by the user imap-mcp runs as.",
            ) from None

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

    def no_greeting(self, waiting_for: str, exc: BaseException) -> StepFailed:
        """No greeting (`exc`: a timeout, a closed connection, an answer of another protocol). Over plain text
        (STARTTLS, none) the usual cause is an implicit-TLS port, which waits for the client's TLS handshake: a
        second connection tries one to tell."""
        if self.tls != "implicit" and answers_tls(self.host, self.port):
            return self.fail("greeting", implicit_port_advice(self.prefix, self.where, self.tls))
        checks = f"check {self.setting('HOST')}, {self.setting('PORT')} and {self.setting('TLS')}"
        if isinstance(exc, TimeoutError):
            return self.fail(
                "greeting",
                f"no answer from {self.where} within {self.setting('TIMEOUT')}={self.timeout:g} s while waiting for "
                f"{waiting_for}: {checks} (is it the right server and port, and does that port speak "
                f"{self.setting('TLS')}={self.tls}?), or raise {self.setting('TIMEOUT')} for a slow server.",
            )
        return self.fail(
            "greeting", f"{self.where} did not greet as an {self.prefix} server ({type(exc).__name__}): {checks}."
        )

    def attempt(self, name: str, waiting_for: str, action: Callable[[], T]) -> T:
        """`action()`, with its timeouts and TLS failures turned into this endpoint's failed step."""
        try:
            return action()
        except TimeoutError as exc:
            if name == "greeting":
                raise self.no_greeting(waiting_for, exc) from None
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


def reach(endpoint: Endpoint, steps: Steps) -> None:
    """DNS, TCP and, for implicit TLS, the handshake: each step's line added as it passes (`StepFailed` at the
    first that fails)."""
    steps.add(resolve(endpoint))
    connection = open_tcp(endpoint)
    try:
        steps.add(Step(endpoint.step("TCP"), "ok", f"{endpoint.where} accepts connections"))
        if endpoint.tls == "implicit":
            steps.add(handshake(endpoint, connection))
        elif not greets_within(connection, min(GREETING_GRACE, endpoint.timeout)) and answers_tls(
            endpoint.host, endpoint.port
        ):  # an implicit-TLS port says nothing: told now, not after the whole timeout
            raise endpoint.fail("greeting", implicit_port_advice(endpoint.prefix, endpoint.where, endpoint.tls))
    finally:
        connection.close()


def handshake(endpoint: Endpoint, connection: socket.socket) -> Step:
    context = endpoint.context()
    wrapped = endpoint.attempt(
        "TLS",
        "the TLS handshake",
        lambda: context.wrap_socket(connection, server_hostname=endpoint.host),
    )
    version = wrapped.version()
    wrapped.close()
    return tls_ok(endpoint, version)


def greeted(endpoint: Endpoint, protocol: str) -> Step:
    return Step(endpoint.step("greeting"), "ok", f"{endpoint.where} greets as an {protocol} server")


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
