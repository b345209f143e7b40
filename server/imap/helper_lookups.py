"""Lookups that serve a judgement or a convenience, never the tool's own answer: they degrade, they never fail it.

What a reading tool is asked for (a message, a page of results) is its answer; around it, it looks up
what only helps: the domains the account writes to (for the look-alike judge), the mailboxes of the
roles a conversation is looked for in, the size of a message's conversation. Such a lookup is bounded
by what it reads (each says its bound) and by IMAP_TIMEOUT, and on an answer it cannot use (a NO or BAD,
an answer that does not parse, an error the pool reports) it gives nothing, with a note saying why, which
the tool shows in its result's `notes` and does without the field.

A lost connection inside an operation is not caught here: the pool runs the whole operation again on a
new connection, which is the tool's business, not the lookup's.
"""

from __future__ import annotations

import imaplib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import MailboxError
from .answers import ANSWER_ERRORS, server_text

T = TypeVar("T")

#: what a lost connection raises inside an operation: the pool's business (it runs the operation again)
_CONNECTION_LOST: tuple[type[BaseException], ...] = (imaplib.IMAP4.abort, OSError, EOFError)
#: what an answer a lookup cannot use raises inside an operation
_UNUSABLE: tuple[type[Exception], ...] = (imaplib.IMAP4.error, MailboxError, *ANSWER_ERRORS)


@dataclass(frozen=True)
class Looked(Generic[T]):
    """What a helper lookup found (`value`), or None and `note`: why the tool goes without it."""

    value: T | None
    note: str | None = None


def note_for(what: str, exc: BaseException) -> str:
    """The note for a lookup of `what` that got an answer it cannot use (`exc`): our words, the server's shown."""
    why = str(exc) if isinstance(exc, MailboxError) else server_text(exc)
    return f"{what} could not be looked up, so this result goes without it: {why}"


def look_up(lookup: Callable[[], T], what: str) -> Looked[T]:
    """Run `lookup` inside an operation: its value, or nothing and a note when the server's answer was unusable."""
    try:
        return Looked(lookup())
    except _CONNECTION_LOST:
        raise
    except _UNUSABLE as exc:
        return Looked(None, note_for(what, exc))


async def look_up_apart(lookup: Callable[[], Awaitable[T]], what: str) -> Looked[T]:
    """Run `lookup`, an operation of its own through the pool: its value, or nothing and a note when it failed
    (the pool already turned every failure into a `MailboxError`)."""
    try:
        return Looked(await lookup())
    except MailboxError as exc:
        return Looked(None, note_for(what, exc))
