"""A logging IMAP proxy for tests and benchmarks: which commands a client sent, and in which order.

A plain TCP proxy on 127.0.0.1 in front of a real server's plain-text port. It forwards every
byte both ways as it comes and, on the way to the server, reads the client's command lines: for
each it keeps the connection it came on, its tag, its command name (`SELECT`, `UID MOVE`, …) and
its arguments with every quoted string shown as `"…"`. A literal (`{n}` or `{n+}` at the end of a
line) is passed through unread, and the line after it continues the same command, so the
contents of a message, a search string sent as a literal or a password are never kept;
LOGIN's and AUTHENTICATE's arguments are not kept at all.

A command is logged before the bytes that end its line are forwarded, so once the client has its
answer the command is in the log. `take()` returns what was logged so far and starts afresh,
which marks a round. The proxy acknowledges what either side sends at once (TCP_QUICKACK), as
Dovecot's own socket does: imapclient writes a command and its CRLF separately, and Mailutils an answer
a line at a time; with Nagle's algorithm on their side a delayed acknowledgement would hold each next
piece back some 40 ms.

    with CommandLog(dovecot.port) as log:
        ... point the client at 127.0.0.1:log.port with IMAP_TLS=none ...
        log.take()                      # forget the login
        ... one round ...
        assert names(log.take()) == ["EXAMINE", "UID SEARCH", "STATUS"]

It can also spoil an answer: `spoil(n, "BAD")` makes the server's completion of the n-th command logged
from then on read `BAD` (or `NO`, with control characters in its text), or cuts the connection there
(`"cut"`), as a server outside the matrix might answer. The server did run the command; the client is
told otherwise. `spoil(n, "empty")` leaves the completion alone and empties the command's SEARCH answer
(`* SEARCH` with no number, an ESEARCH with no ALL), as a server that loses mail meanwhile, or answers
wrongly, does. The answer's lines are then read whole (literals passed through unread).
"""

from __future__ import annotations

import contextlib
import functools
import re
import socket
from dataclasses import dataclass
from typing import Literal

from line_proxy import LITERAL, LineProxy, Lines, Pump, acknowledge_at_once

Spoil = Literal["BAD", "NO", "cut", "empty"]
#: what a spoiled completion says after its tag (control characters included: they must not reach a caller raw)
SPOILED = {"BAD": b"BAD [CLIENTBUG] \x1b[2Jnot expected\x07", "NO": b"NO [UNAVAILABLE] \x00not expected\x1b"}
#: a SEARCH answer (`* SEARCH 1 2`) and an ESEARCH one (`* ESEARCH (TAG "A1") UID ALL 1:2`), up to what is emptied
_SEARCH_ANSWER = re.compile(rb"^(\* SEARCH)\b.*$|^(\* ESEARCH(?: \(TAG \"[^\"]*\"\))?(?: UID)?)\b.*$", re.IGNORECASE)

_QUOTED = re.compile(rb'"(?:[^"\\]|\\.)*"')
#: a tag, then a command word; a line of another shape (an AUTHENTICATE response, IDLE's DONE) is no command
_COMMAND = re.compile(rb"^([^\s(){%*\"\\]+) ([A-Za-z]+)(?: (.*))?$")
#: commands whose arguments are credentials: logged by name only
_SECRET_ARGUMENTS = {"LOGIN", "AUTHENTICATE"}


@dataclass(frozen=True)
class Command:
    """One command a client sent: on the proxy's `connection`-th connection (from 0), with `tag` and `name`
    (`UID` and the command after it make one name), and its arguments without quoted strings' contents."""

    connection: int
    tag: str
    name: str
    arguments: str


def names(commands: list[Command]) -> list[str]:
    """The commands' names, in the order they were sent."""
    return [command.name for command in commands]


def parse_command(connection: int, line: bytes) -> Command | None:
    """The command a client's line starts (`line` without its CRLF), or None when it starts none."""
    found = _COMMAND.match(line)
    if found is None:
        return None
    tag, word, rest = found.group(1), found.group(2).upper(), found.group(3) or b""
    name = word.decode("ascii")
    if name == "UID":
        second, _, rest = rest.partition(b" ")
        name = f"UID {second.decode('ascii', 'replace').upper()}"
    shown = "" if name in _SECRET_ARGUMENTS else _QUOTED.sub(b'"\xe2\x80\xa6"', rest).decode("utf-8", "replace")
    return Command(connection, tag.decode("ascii", "replace"), name, shown)


class _ClientLines:
    """What one connection's client sends: forwarded as it comes, its command lines logged."""

    def __init__(self, log: CommandLog, connection: int, source: socket.socket, sink: socket.socket) -> None:
        self.log, self.connection, self.source, self.sink = log, connection, source, sink
        self.buffer = b""
        self.literal = 0  #: bytes of a literal still to pass through unread
        self.continuing = False  #: the next line continues a command (it follows a literal)

    def pump(self) -> None:
        with contextlib.suppress(OSError):
            while data := self.source.recv(65536):
                acknowledge_at_once(self.source)
                self.buffer += data
                self._log_lines()
                self.sink.sendall(data)  # as it came: holding a part back would stall a client that writes in pieces
        with contextlib.suppress(OSError):
            self.sink.shutdown(socket.SHUT_WR)

    def _log_lines(self) -> None:
        """Log each command line the buffer completes; drop what was read (literals unread)."""
        while self.buffer:
            if self.literal:
                skipped = min(self.literal, len(self.buffer))
                self.buffer, self.literal = self.buffer[skipped:], self.literal - skipped
                continue
            end = self.buffer.find(b"\r\n")
            if end < 0:
                return
            line, self.buffer = self.buffer[: end + 2], self.buffer[end + 2 :]
            if not self.continuing:
                self.log._add(parse_command(self.connection, line[:-2]))
            found = LITERAL.search(line)
            self.literal = int(found.group(1)) if found else 0
            self.continuing = found is not None


class CommandLog(LineProxy):
    """A proxy on 127.0.0.1:`port` in front of the plain-text IMAP server at `upstream_port`, logging every
    client command (see the module)."""

    name = "command-log"

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        super().__init__(upstream_port, upstream_host)
        self._commands: list[Command] = []
        #: (commands still to log before the one spoiled, how, the name they must have: None for any)
        self._spoil: tuple[int, Spoil, str | None] | None = None
        self._spoiled_tags: dict[bytes, Spoil] = {}
        #: per connection, the tag of the command whose SEARCH answer is emptied ("empty")
        self._emptied: dict[int, bytes] = {}
        self.spoiled: list[Command] = []  #: the commands whose answers were spoiled

    def take(self) -> list[Command]:
        """The commands logged since the last `take` (or since the start), oldest first; the log starts afresh."""
        with self._lock:
            taken, self._commands = self._commands, []
        return taken

    def spoil(self, nth: int, how: Spoil, named: str | None = None) -> None:
        """Spoil the answer to the `nth` command (from 0) logged from now on, once; with `named`, the `nth` of the
        commands of that name (`UID SEARCH`)."""
        with self._lock:
            self._spoil = (nth, how, named)

    def _add(self, command: Command | None) -> None:
        if command is None:
            return
        with self._lock:
            self._commands.append(command)
            if self._spoil is None:
                return
            left, how, named = self._spoil
            if named is not None and command.name != named:
                return
            if left:
                self._spoil = (left - 1, how, named)
            else:
                self._spoil = None
                tag = command.tag.encode("ascii", "replace")
                if how == "empty":
                    self._emptied[command.connection] = tag
                else:
                    self._spoiled_tags[tag] = how
                self.spoiled.append(command)

    def _answer(self, connection: int, line: bytes) -> bytes | None:
        """A server line as the client gets it on `connection`: a completion `spoil` chose rewritten, or the
        connection cut; a SEARCH answer emptied."""
        tag = line.split(b" ", 1)[0]
        with self._lock:
            how = self._spoiled_tags.pop(tag, None)
            emptied = self._emptied.get(connection)
            if emptied == tag:
                del self._emptied[connection]
        if emptied is not None and (search := _SEARCH_ANSWER.match(line.rstrip(b"\r\n"))):
            return (search.group(1) or search.group(2)) + b"\r\n"
        if how is None:
            return line
        return None if how == "cut" else tag + b" " + SPOILED[how] + b"\r\n"

    def __enter__(self) -> CommandLog:
        super().__enter__()
        return self

    def pumps(self, number: int, client: socket.socket, server: socket.socket) -> list[Pump]:
        answer = functools.partial(self._answer, number)
        return [_ClientLines(self, number, client, server).pump, Lines(server, client, answer).pump]
