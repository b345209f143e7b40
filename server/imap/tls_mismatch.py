"""Telling within about two seconds that a port speaks the other kind of TLS than the settings say.

Plain text (STARTTLS or none) against an implicit-TLS port: such a port waits for the client's TLS handshake
and says nothing, so a client waiting for a greeting would wait its whole timeout. When no greeting has come
after `GREETING_GRACE` seconds, a second connection sends a TLS ClientHello (`answers_tls`): an answer that
starts with a TLS record (a handshake, 0x16, or an alert, 0x15, then major version 3) names the port for what
it is. The first connection is left as it is, so a slow server that greets later still works.

Implicit TLS against a port that speaks plain text: the handshake fails at once (the greeting is no TLS
record), but the library's reason (WRONG_VERSION_NUMBER) names neither. A second connection reads what the
port says in plain text (`plain_greeting`): an IMAP (`* OK`) or SMTP (`220`) greeting names the mistake.

Neither probe sends a byte of the account's or reads more than a few bytes; each has `PROBE_SECONDS`. A probe is
one more connection, for at most that long and outside the pool's bound (IMAP_MCP_MAX_CONNECTIONS), made only
when something is wrong: a greeting that is late, a handshake that failed.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl

#: seconds a plain-text connection waits for the greeting before asking whether the port speaks TLS
GREETING_GRACE = 1.0
#: seconds each probe has, its connection included
PROBE_SECONDS = 1.0
#: the first bytes of a TLS record from a server: a handshake (0x16) or an alert (0x15), then version 3.x
_TLS_RECORD_TYPES = (0x15, 0x16)
_PLAIN_GREETINGS = (b"* OK", b"* PREAUTH", b"* BYE", b"220")


def greets_within(sock: socket.socket, seconds: float) -> bool:
    """Whether `sock` has something to read (a greeting, or its end) within `seconds`; reads nothing."""
    readable, _, _ = select.select([sock], [], [], max(seconds, 0.0))
    return bool(readable)


def _client_hello(host: str) -> bytes:
    """The bytes of a TLS ClientHello to `host`, made by the ssl module without a socket."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=host)
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def _first_bytes(host: str, port: int, send: bytes, count: int, seconds: float) -> bytes:
    """Up to `count` bytes the port answers (after `send`, if any) within `seconds`; b"" on any failure."""
    try:
        with socket.create_connection((host, port), timeout=seconds) as probe:
            if send:
                probe.sendall(send)
            return probe.recv(count)
    except OSError:
        return b""


def answers_tls(host: str, port: int, seconds: float = PROBE_SECONDS) -> bool:
    """Whether `host:port` answers a TLS ClientHello with a TLS record: an implicit-TLS port."""
    answer = _first_bytes(host, port, _client_hello(host), 2, seconds)
    return len(answer) == 2 and answer[0] in _TLS_RECORD_TYPES and answer[1] == 3


def plain_greeting(host: str, port: int, seconds: float = PROBE_SECONDS) -> bool:
    """Whether `host:port` greets in plain text (`* OK`, `* PREAUTH`, `* BYE` or `220`) without being asked."""
    return _first_bytes(host, port, b"", 16, seconds).startswith(_PLAIN_GREETINGS)


def implicit_port_advice(prefix: str, where: str, tls: str) -> str:
    """What to change when a port meant for plain text (`tls`: starttls or none) is an implicit-TLS port."""
    implicit_port, plain_port = ("993", "143") if prefix == "IMAP" else ("465", "587")
    return (
        f"{where} waits for a TLS handshake instead of greeting in plain text: it is an implicit-TLS port (usually "
        f"{implicit_port}). Set {prefix}_TLS=implicit, or set {prefix}_PORT to the port for {prefix}_TLS={tls} "
        f"(usually {plain_port})."
    )


def plain_port_advice(prefix: str, where: str) -> str:
    """What to change when a port meant for implicit TLS greets in plain text."""
    implicit_port, plain_port = ("993", "143") if prefix == "IMAP" else ("465", "587")
    return (
        f"{where} greets in plain text instead of starting TLS: it is not an implicit-TLS port. Set "
        f"{prefix}_TLS=starttls for it (usually port {plain_port}), or set {prefix}_PORT to the implicit-TLS port "
        f"(usually {implicit_port})."
    )
