"""Every HTTP request imap-mcp makes (OAuth token and device endpoints, webhook delivery, an authorization
server's metadata and keys): bounded and strict.

At server/'s top level, not in a feature's folder: OAuth and the webhooks both make their requests through it.

The far side is not trusted. `post` (and `get`) gives a request one deadline for all of it: connecting, TLS,
sending, the status line, the headers and the body read (httpx's own timeouts bound each read, so
one byte a second would never trip them). It follows no redirect: a 3xx is `Redirected`, whatever
the Location, so the credentials and secrets of a request go to the configured URL only. It reads
at most `limit` bytes of an answer. What the far side says reaches a log line or a result only
through `excerpt`: one short line, every secret replaced.
"""

from __future__ import annotations

import os
import socket
import ssl
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial

import anyio
import httpx

from .errors import ImapMcpError
from .tls import tls_context

#: the longest excerpt of a text from the far side
EXCERPT_CHARS = 200
#: Unicode categories never shown: controls, format characters (bidi overrides, zero-width), line and
#: paragraph separators; any of them could break a log line or hide what it says
_UNSHOWN = frozenset({"Cc", "Cf", "Zl", "Zp"})


class OutboundError(ImapMcpError):
    """The request got no usable answer; the message (what went wrong, by name) holds no URL, header or secret."""


class TooSlow(OutboundError):
    """The deadline passed before the answer was read."""


class Unreachable(OutboundError):
    """No connection (refused, no such host, TLS failed); the message is the system's reason."""


class Redirected(OutboundError):
    """The answer was a 3xx: not followed."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status} (a redirect, not followed)")
        self.status = status


@dataclass(frozen=True)
class Answer:
    status: int
    #: the body's first `limit` bytes at most (nothing when `limit` was 0)
    body: bytes = b""
    #: the body went on beyond `limit`: `body` is only its start
    cut: bool = False


def post(url: str, content: bytes, headers: Mapping[str, str], *, seconds: float, limit: int) -> Answer:
    """POST `content` to `url`; the answer (not a 3xx) within `seconds` in all, or `OutboundError`.

    With `limit` 0 only the status line and headers are read. Runs its own event loop: call it
    from a thread (a worker thread, or a command's main thread), never from a running loop.
    """
    return anyio.run(partial(_request, "POST", url, content, dict(headers), seconds, limit))


def get(url: str, headers: Mapping[str, str], *, seconds: float, limit: int) -> Answer:
    """GET `url`, with the bounds of `post` (and, as it, called from a thread, never from a running loop)."""
    return anyio.run(partial(_request, "GET", url, b"", dict(headers), seconds, limit))


async def _request(
    method: str, url: str, content: bytes, headers: dict[str, str], seconds: float, limit: int
) -> Answer:
    headers = {"accept-encoding": "identity", **headers}  # the body as sent: `limit` bounds what is read
    try:
        with anyio.fail_after(seconds):
            async with (
                httpx.AsyncClient(verify=tls_context(None), follow_redirects=False, timeout=seconds) as client,
                client.stream(method, url, content=content if method == "POST" else None, headers=headers) as answer,
            ):
                if 300 <= answer.status_code < 400:
                    raise Redirected(answer.status_code)
                if limit == 0:
                    return Answer(answer.status_code)
                body, cut = await _start_of(answer, limit)
                return Answer(answer.status_code, body, cut)
    except (TimeoutError, httpx.TimeoutException):
        raise TooSlow(f"no complete answer within {seconds:g} s") from None
    except httpx.ConnectError as exc:
        raise Unreachable(_system_reason(exc)) from None
    except httpx.HTTPError as exc:
        raise OutboundError(type(exc).__name__) from None


def _system_reason(exc: BaseException) -> str:
    """What the system said, from the end of the chain (httpx's own text is "All connection attempts failed")."""
    reason = str(exc) or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return str(cause)
        if isinstance(cause, OSError) and cause.strerror:
            number = cause.errno if not isinstance(cause, socket.gaierror) else None
            reason = os.strerror(number) if number is not None and number > 0 else cause.strerror  # asyncio rewords it
        cause = cause.__cause__ or cause.__context__
    return reason


async def _start_of(answer: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body, as sent (no decompression), and whether more followed."""
    body = bytearray()
    async for chunk in answer.aiter_raw():
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]), True
    return bytes(body), False


def excerpt(text: str | bytes, secrets: Iterable[str] = (), limit: int = EXCERPT_CHARS) -> str:
    """`text` from the far side, safe for a log line or a result: every secret `***`, every control, format or
    separator character a space, white space runs as one, cut to `limit` characters ("…" ends a cut).

    Secrets are replaced before the cut, so a cut cannot leave part of one, and again after the clean-up,
    which can make one of a text that held controls or line breaks in its place.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    hidden = sorted({s for s in secrets if s}, key=len, reverse=True)
    text = _hide(text, hidden)
    text = " ".join("".join(" " if unicodedata.category(c) in _UNSHOWN else c for c in text).split())
    text = _hide(text, hidden)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _hide(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
