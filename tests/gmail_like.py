"""A Gmail-like IMAP server for tests: a real server behind a proxy that announces X-GM-EXT-1 and answers X-GM-RAW.

No Gmail (nor any server with Gmail's extensions) runs on this machine, so this proxy makes Dovecot look like
one, on the wire (`line_proxy`, literals passed through untouched):

- from the server: every capability list (`* CAPABILITY ...`, `[CAPABILITY ...]`) gains `X-GM-EXT-1`;
- from the client: `X-GM-RAW <string>` in a command becomes `TEXT <string>` (a stand-in for Gmail's own
  search: the same string, found the way Dovecot finds text), and each command line is kept in `commands`,
  so a test sees what imap-mcp sent.
"""

from __future__ import annotations

import re
import socket

from line_proxy import LineProxy, Lines, Pump

GMAIL_EXTENSIONS = b"X-GM-EXT-1"
_CAPABILITIES = re.compile(rb"((?:^\* |\[)CAPABILITY [^\]\r\n]*)", re.IGNORECASE)
_GMAIL_RAW = re.compile(rb"\bX-GM-RAW ", re.IGNORECASE)


def with_gmail_extensions(line: bytes) -> bytes:
    return _CAPABILITIES.sub(lambda found: found.group(1) + b" " + GMAIL_EXTENSIONS, line)


class GmailLikeServer(LineProxy):
    """A proxy on 127.0.0.1:`port` in front of the plain-text IMAP server at `upstream_port` (see the module)."""

    name = "gmail-like"

    def __init__(self, upstream_port: int) -> None:
        super().__init__(upstream_port)
        self.commands: list[bytes] = []

    def __enter__(self) -> GmailLikeServer:
        super().__enter__()
        return self

    def _searched_as_text(self, line: bytes) -> bytes:
        self.commands.append(line)
        return _GMAIL_RAW.sub(b"TEXT ", line)

    def pumps(self, number: int, client: socket.socket, server: socket.socket) -> list[Pump]:
        return [Lines(client, server, self._searched_as_text).pump, Lines(server, client, with_gmail_extensions).pump]
