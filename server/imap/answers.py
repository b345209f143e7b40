"""A server's words as messages show them: printable, short, and naming the command they answer.

Mail servers are written by others and their answers may hold anything (control characters, a
whole message's worth of text): `shown` keeps one short printable line. `server_text` reads the
command and the server's words out of a NO or BAD as imaplib and imapclient word it.
`unexpected_answer` is the error for an answer that is well-formed IMAP but not what the command
needs (a NIL where a number is due, an item missing), naming the command and showing the answer.
"""

from __future__ import annotations

import ast
import re

from ..errors import MailboxError

SERVER_TEXT_MAX = 200

#: control characters (C0, DEL, C1): a server's words are shown without them
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
#: how imaplib words a NO or BAD (`UID command error: BAD [b'...']`) and how imapclient does (`select failed: ...`)
_IMAPLIB_REFUSAL = re.compile(r"(?P<command>[A-Z][A-Z ]*) command error: (?P<kind>NO|BAD) (?P<said>\[.*\])", re.S)
#: the longest list of answer lines (as imaplib writes it) read back into its lines; a longer one is shown as it is
_READ_BACK_MAX = 4096
_IMAPCLIENT_REFUSAL = re.compile(r"(?P<command>[a-z][a-z_ ]*) failed: (?P<said>.*)", re.S)


def shown(answer: object) -> str:
    """A server's answer (bytes or text) as one short printable line: control characters dropped, cut."""
    text = answer.decode("utf-8", "replace") if isinstance(answer, bytes | bytearray) else str(answer)
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= SERVER_TEXT_MAX else text[: SERVER_TEXT_MAX - 1] + "…"


def server_text(exc: BaseException) -> str:
    """The command and the server's own words in a refusal (`UID answered BAD: ...`), or the exception's
    text without imaplib's prefix; cut short and printable: context for a message, never all of it."""
    text = str(exc)
    if found := _IMAPLIB_REFUSAL.fullmatch(text):
        return shown(f"{found['command']} answered {found['kind']}: {_lines(found['said'])}")
    if found := _IMAPCLIENT_REFUSAL.fullmatch(text):
        return shown(f"{found['command'].upper()} answered: {found['said']}")
    text = text.split(": ", 1)[-1] if ": " in text else text
    return shown(text) or type(exc).__name__


def _lines(written: str) -> str:
    """The answer lines imaplib wrote into its error as a Python list (`[b'...']`), as text again."""
    try:
        lines = ast.literal_eval(written) if len(written) <= _READ_BACK_MAX else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        lines = None
    if not isinstance(lines, list):
        return written
    return " ".join(shown(line) for line in lines if isinstance(line, bytes | str))


class UnexpectedAnswer(MailboxError):
    """The server answered a command with something imap-mcp cannot use (a NIL where a number is due, an item
    missing); the message names the command and shows the answer."""


def unexpected_answer(command: str, answer: object, consequence: str = "") -> UnexpectedAnswer:
    """The `UnexpectedAnswer` for `answer` to `command` (e.g. "EXAMINE"); `consequence` says what could not be done."""
    return UnexpectedAnswer(
        f"The IMAP server answered {command} with something imap-mcp cannot use ({shown(answer)})"
        f"{consequence}. Try again; if it keeps happening, the server does not support this (report it)."
    )


#: what code reading an answer raises when the answer is not what it needs (a NIL where a number is due:
#: TypeError; an item missing: KeyError): the pool turns these into `not_understood`
ANSWER_ERRORS: tuple[type[Exception], ...] = (ValueError, KeyError, TypeError, IndexError, AttributeError)


def not_understood(exc: BaseException, command: bytes, last_line: bytes, doing: str) -> UnexpectedAnswer:
    """The `UnexpectedAnswer` for `exc`, raised while reading the answer to `command` (the last line read:
    `last_line`) while `doing`."""
    named = shown(command) or "a command"
    return UnexpectedAnswer(
        f"The IMAP server answered {named} in a way imap-mcp cannot use while {doing} ({type(exc).__name__}; its "
        f"last line: {shown(last_line) or 'none'}). Try again; if it keeps happening, the server does not support "
        "this (report it)."
    )
