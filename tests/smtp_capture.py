"""A capturing SMTP server on loopback for the tests (aiosmtpd), adapted from shared/reference/test-infra.

    with CaptureSMTP(auth=("user", "pw"), starttls=True) as smtp:
        ... code under test sends to smtp.host, smtp.port (CA file: smtp.cafile) ...
    message, envelope = smtp.messages[0], smtp.envelopes[0]   # EmailMessage, Received

smtplib returns only after the server answered DATA, so a message is recorded by then.

Plain, STARTTLS (`starttls=True`) or implicit TLS (`implicit_tls=True`), with optional AUTH
PLAIN/LOGIN or XOAUTH2 and OAUTHBEARER (`oauth` checks user and bearer token), and failure injection:
`reject_rcpt` refuses those recipients, `fail_data_code` answers DATA with that code. `gate`
holds every message at DATA until a number of concurrent calls have each either returned or
reached DATA (see `Gate`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import email
import email.policy
import logging
import shutil
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any, TypedDict

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import MISSING, SMTP, AuthResult, Envelope, LoginPassword, Session

from imap_mcp.server.demo.dovecot import free_port

#: the From address imap-mcp sends as in the tests; the sample mail is addressed to it
SENDER = "Demo <demo@example.org>"

# aiosmtpd 1.4.6 touches its deprecated Session.login_data on every successful AUTH and warns on "mail.log"
logging.getLogger("mail.log").setLevel(logging.ERROR)


@dataclass(frozen=True)
class Received:
    """What the envelope of one accepted message said."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    authenticated: bool
    tls: bool


def self_signed(directory: Path) -> Path:
    """A certificate for localhost and 127.0.0.1; returns the PEM, next to its key `smtp-key.pem`."""
    cert, key = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "7", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert


class Gate:
    """For tests of concurrent sends, without timing: DATA waits until each of `expected` calls has
    either returned (`returned`) or is itself waiting at DATA.

    So an attempt that sends is still sending while every other attempt runs; and code that lets
    several attempts send gets all of them released once all are waiting, and the test sees every
    message rather than hanging.
    """

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self._settled = 0
        self._open = False
        self._condition = threading.Condition()

    def returned(self) -> None:
        """One call has returned (call this whatever its outcome)."""
        self._count_one()

    async def hold(self) -> None:
        self._count_one()
        await asyncio.to_thread(self._wait_open)  # in a thread: the listener keeps serving other sessions

    def _count_one(self) -> None:
        with self._condition:
            self._settled += 1
            if self._settled >= self.expected:
                self._open = True
                self._condition.notify_all()

    def _wait_open(self) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self._open)


class _Handler:
    def __init__(self, owner: CaptureSMTP) -> None:
        self.owner = owner

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, rcpt_options: list[str]
    ) -> str:
        if address.lower() in self.owner.reject_rcpt:
            return f"550 5.1.1 <{address}>: Recipient address rejected"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        if self.owner.gate is not None:
            await self.owner.gate.hold()
        if self.owner.fail_data_code:
            return f"{self.owner.fail_data_code} Requested action aborted (test)"
        raw = envelope.original_content or envelope.content
        assert isinstance(raw, bytes)
        # parsed with plain \n line ends, as the message was written before it went on the wire
        message = email.message_from_bytes(raw.replace(b"\r\n", b"\n"), policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        received = Received(
            mail_from=str(envelope.mail_from),
            rcpt_tos=tuple(envelope.rcpt_tos),
            authenticated=bool(session.authenticated),
            tls=session.ssl is not None or self.owner.implicit_tls,
        )
        self.owner.record(message, received, raw)
        return "250 2.0.0 OK: queued"


def _oauthbearer_user(gs2_header: str) -> str:
    """The authorization identity of an RFC 7628 GS2 header (`n,a=user,`), its `=2C` and `=3D` decoded."""
    fields = dict(part.split("=", 1) for part in gs2_header.split(",") if "=" in part)
    return fields.get("a", "").replace("=2C", ",").replace("=3D", "=")


class _OAuthHandler(_Handler):
    """Also takes AUTH XOAUTH2 and OAUTHBEARER (RFC 7628), checking user and bearer token with `owner.oauth`.

    A refused token is answered as the providers do: 334 with a JSON error, then, after the client's
    ending answer (anything for XOAUTH2, exactly %x01 for OAUTHBEARER), 535.
    """

    async def auth_XOAUTH2(self, server: SMTP, args: list[str]) -> AuthResult:
        blob = await self._initial_response(server, args)
        if blob is None:
            return AuthResult(success=False, handled=False)
        fields = dict(part.split("=", 1) for part in blob.decode().split("\x01") if "=" in part)
        return await self._bearer_login(server, "XOAUTH2", fields.get("user", ""), fields.get("auth", ""))

    async def auth_OAUTHBEARER(self, server: SMTP, args: list[str]) -> AuthResult:
        blob = await self._initial_response(server, args)
        if blob is None:
            return AuthResult(success=False, handled=False)
        header, *parts = blob.decode().split("\x01")
        fields = dict(part.split("=", 1) for part in parts if "=" in part)
        if (
            not header.startswith("n,")
            or fields.get("host") != self.owner.host
            or fields.get("port") != str(self.owner.port)
        ):
            return AuthResult(success=False, handled=False)  # not an RFC 7628 response for this server
        return await self._bearer_login(server, "OAUTHBEARER", _oauthbearer_user(header), fields.get("auth", ""))

    async def _initial_response(self, server: SMTP, args: list[str]) -> bytes | None:
        if len(args) == 1:
            answer = await server.challenge_auth("")
            return None if answer is MISSING else bytes(answer)
        try:
            return base64.b64decode(args[1], validate=True)
        except binascii.Error:
            return None

    async def _bearer_login(self, server: SMTP, mechanism: str, user: str, bearer: str) -> AuthResult:
        assert self.owner.oauth is not None
        self.owner.oauth_attempts += 1
        if bearer.startswith("Bearer ") and self.owner.oauth(user, bearer[7:]):
            self.owner.oauth_logins.append((mechanism, user))
            return AuthResult(success=True, auth_data=user)
        ending = await server.challenge_auth('{"status":"invalid_token","schemes":"bearer","scope":"mail"}')
        self.owner.oauth_endings.append(ending if isinstance(ending, bytes) else None)
        return AuthResult(success=False, handled=False)


class TlsOptions(TypedDict, total=False):
    """The TLS keywords of CaptureSMTP, as a test parametrizes them."""

    starttls: bool
    require_starttls: bool
    implicit_tls: bool


class CaptureSMTP:
    def __init__(
        self,
        *,
        auth: tuple[str, str] | None = None,
        starttls: bool = False,
        require_starttls: bool = False,
        implicit_tls: bool = False,
        reject_rcpt: tuple[str, ...] = (),
        fail_data_code: int | None = None,
        gate: Gate | None = None,
        oauth: Callable[[str, str], bool] | None = None,
        oauth_mechanisms: tuple[str, ...] = ("XOAUTH2", "OAUTHBEARER"),
    ) -> None:
        self.host = "127.0.0.1"
        self.oauth = oauth
        self.oauth_attempts = 0
        #: (mechanism, user) of every accepted OAuth login; the client's answer to each refusal's error challenge
        self.oauth_logins: list[tuple[str, str]] = []
        self.oauth_endings: list[bytes | None] = []
        self.port = free_port()
        self.auth = auth
        self.implicit_tls = implicit_tls
        self.reject_rcpt = {a.lower() for a in reject_rcpt}
        self.fail_data_code = fail_data_code
        self.gate = gate
        self.messages: list[EmailMessage] = []
        self.envelopes: list[Received] = []
        #: each message's bytes as DATA carried them (dots unstuffed, CRLF line ends)
        self.raw: list[bytes] = []
        self._lock = threading.Lock()
        self._tmp = Path(tempfile.mkdtemp(prefix="smtp."))
        self.cafile: Path | None = None
        options: dict[str, Any] = {"hostname": self.host, "port": self.port, "decode_data": False}
        if starttls or implicit_tls:
            self.cafile = self_signed(self._tmp)
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(self.cafile, self._tmp / "smtp-key.pem")
            options["ssl_context" if implicit_tls else "tls_context"] = context
            if starttls:
                options["require_starttls"] = require_starttls
        if auth:
            options.update(authenticator=self._authenticate, auth_require_tls=False)
        if oauth:
            hidden = [m for m in ("XOAUTH2", "OAUTHBEARER") if m not in oauth_mechanisms]
            options.update(auth_require_tls=False, auth_exclude_mechanism=hidden)
        self.controller = Controller((_OAuthHandler if oauth else _Handler)(self), **options)

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: object
    ) -> AuthResult:
        ok = (
            self.auth is not None
            and isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == self.auth[0]
            and auth_data.password.decode() == self.auth[1]
        )
        return AuthResult(success=ok, handled=False)

    def record(self, message: EmailMessage, received: Received, raw: bytes = b"") -> None:
        with self._lock:
            self.messages.append(message)
            self.envelopes.append(received)
            self.raw.append(raw)

    def start(self) -> CaptureSMTP:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> CaptureSMTP:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        """The SMTP_* settings that point imap-mcp at this server."""
        tls = "implicit" if self.implicit_tls else "starttls" if self.cafile else "none"
        env = {"SMTP_HOST": self.host, "SMTP_PORT": str(self.port), "SMTP_TLS": tls}
        if self.cafile:
            env["SMTP_CA_FILE"] = str(self.cafile)
        return env
