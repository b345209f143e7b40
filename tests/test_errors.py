"""One error tree: every exception an IMAP call can raise becomes a message a model can act on.

The pool turns whatever imapclient, imaplib, sockets and TLS raise into a `MailboxError`
(`imap.failures.explain`); every refusal a server module raises is an `ImapMcpError`, which the
tools map in one place (`tools.registry`). These tests fail when a new exception type appears that
no layer maps: in a library upgrade, or in a new server module.
"""

from __future__ import annotations

import ast
import imaplib
import importlib
import inspect
import socket
import ssl
from pathlib import Path

import imapclient.exceptions
import pytest

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.errors import ImapMcpError, MailboxError
from imap_mcp.server.imap.failures import LIBRARY_ERRORS, explain
from imap_mcp.server.setting_values import Secret

SETTINGS = ImapSettings(host="imap.example", port=993, username="u@imap.example", password=Secret("pw"), timeout=7.5)
#: exceptions defined in server/ that never reach a tool's answer: raised at start (settings, the demo's Dovecot,
#: the address to listen on), inside `imap-mcp check` (a failed step ends that server's check), or in the worker
#: thread of a call already cancelled, which gets no answer at all (`tools.cancellation.CallCancelled`)
NOT_TOOL_ERRORS = {"ConfigError", "DovecotError", "CannotListen", "StepFailed", "CallCancelled"}


def subclasses(root: type[BaseException]) -> set[type[BaseException]]:
    found = {root}
    for child in root.__subclasses__():
        found |= subclasses(child)
    return found


def library_exceptions() -> set[type[BaseException]]:
    """Every exception class imapclient, imaplib, socket and ssl define, and the OSErrors a socket can raise."""
    modules = (imapclient.exceptions, socket, ssl)
    defined = {c for m in modules for _, c in inspect.getmembers(m, inspect.isclass) if issubclass(c, BaseException)}
    imaplib_errors = {imaplib.IMAP4.error, imaplib.IMAP4.abort, imaplib.IMAP4.readonly}
    os_errors = {c for c in subclasses(OSError) if c.__module__ in {"builtins", "socket", "ssl"}}
    everything = defined | imaplib_errors | os_errors | {EOFError}
    return {c for c in everything if not c.__name__.startswith("_")}


def instance_of(kind: type[BaseException]) -> BaseException:
    try:
        return kind("NO [SERVERBUG] raw server words")
    except TypeError:
        return kind.__new__(kind)


def qualified_name(kind: type[BaseException]) -> str:
    """The sort key of the parametrized exception classes (a lambda's argument would be typed `object` there)."""
    return f"{kind.__module__}.{kind.__qualname__}"


#: sorted here, apart from parametrize, whose argument would have mypy read the classes as `object`
LIBRARY_EXCEPTIONS: list[type[BaseException]] = sorted(library_exceptions(), key=qualified_name)


@pytest.mark.parametrize("kind", LIBRARY_EXCEPTIONS, ids=str)
def test_every_library_exception_is_explained(kind: type[BaseException]) -> None:
    assert issubclass(kind, LIBRARY_ERRORS), f"{kind} escapes the pool: add it to failures.LIBRARY_ERRORS"
    exc = instance_of(kind)
    error = explain(exc, SETTINGS, "reading the mailbox 'INBOX'")
    text = str(error)
    assert isinstance(error, MailboxError)
    assert text != str(exc) and "IMAP" in text, text  # never the raw text alone
    assert any(word in text for word in ("try again", "check", "Try again", "cannot do it")), text


@pytest.mark.parametrize("kind", [socket.timeout, TimeoutError])
def test_a_timeout_names_imap_timeout_and_what_was_waited_for(kind: type[BaseException]) -> None:
    text = str(explain(kind("timed out"), SETTINGS, "reading the mailbox 'INBOX'"))
    assert "IMAP_TIMEOUT (7.5 seconds)" in text and "reading the mailbox 'INBOX'" in text


def test_a_server_refusal_keeps_a_short_reason_and_says_what_to_do() -> None:
    text = str(explain(imaplib.IMAP4.error("UID command error: BAD [b'Error in IMAP command']"), SETTINGS, "x"))
    assert text.startswith("The IMAP server refused the request while x (UID answered BAD: Error in IMAP command)")
    assert "list_mailboxes" in text


def test_an_exception_explain_does_not_know_is_a_crash_not_a_silent_mapping() -> None:
    with pytest.raises(TypeError, match="EXPLAINERS"):
        explain(RuntimeError("bug"), SETTINGS, "x")


def test_every_exception_a_server_module_defines_is_in_the_tree() -> None:
    """A new exception class must derive from `MailboxError` or `OutgoingError`, so the tools map it."""
    import imap_mcp.server

    outside = []
    folder = Path(imap_mcp.server.__file__).parent
    for path in sorted(p for p in folder.rglob("*.py") if p.name != "__main__.py"):
        module = importlib.import_module(".".join(["imap_mcp.server", *path.relative_to(folder).with_suffix("").parts]))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name not in NOT_TOOL_ERRORS:
                cls = getattr(module, node.name, None)
                if isinstance(cls, type) and issubclass(cls, BaseException) and not issubclass(cls, ImapMcpError):
                    outside.append(f"{module.__name__}.{node.name}")
    assert outside == []
