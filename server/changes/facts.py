"""What the IMAP server itself knows of the messages a person is asked to move, copy or delete.

When each arrived (INTERNALDATE, in the person's terms: `texts.arrived`), its size, whether it was read or flagged,
and how many attachments its BODYSTRUCTURE lists; and how many of its mailbox's messages the change takes. Never a
subject, a sender or a body: anyone who can mail the account wrote those, and the dialog is read by a model at the
moment it decides. Read with one FETCH of at most `SHOWN_MAX` messages, in the command that plans the change.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from imap_mcp.protocol.local_time import DialogClock
from imap_mcp.protocol.texts import arrived, shown, size_text

from ..imap.fetch import fetch
from ..imap.session import Session
from ..reading.parts import attachments, parse_structure

#: the most messages a dialog describes one by one; the rest are counted ("and 7 more")
SHOWN_MAX = 10
FACT_ITEMS = ("INTERNALDATE", "RFC822.SIZE", "FLAGS", "BODYSTRUCTURE")


@dataclass(frozen=True)
class MessageFacts:
    """One message as the server describes it (None: the server did not say, or said it unreadably)."""

    uid: int
    received: dt.datetime | None
    size: int | None
    flags: frozenset[bytes]
    attachments: int | None


@dataclass(frozen=True)
class SourceFacts:
    """The first `SHOWN_MAX` messages of a change, and how many messages their mailbox holds (EXISTS)."""

    mailbox_messages: int | None
    messages: tuple[MessageFacts, ...]


def read_facts(client: Session, uids: tuple[int, ...], mailbox_messages: int | None) -> SourceFacts:
    """One FETCH of `FACT_ITEMS` for the first `SHOWN_MAX` of `uids`, in the mailbox selected now."""
    fetched = fetch(client, list(uids[:SHOWN_MAX]), FACT_ITEMS)
    return SourceFacts(mailbox_messages, tuple(_facts(uid, fetched.get(uid, {})) for uid in uids[:SHOWN_MAX]))


def _facts(uid: int, data: dict[bytes, object]) -> MessageFacts:
    received, size, flags = data.get(b"INTERNALDATE"), data.get(b"RFC822.SIZE"), data.get(b"FLAGS")
    return MessageFacts(
        uid=uid,
        received=received if isinstance(received, dt.datetime) else None,
        size=size if isinstance(size, int) else None,
        flags=frozenset(f.lower() for f in flags if isinstance(f, bytes)) if isinstance(flags, tuple) else frozenset(),
        attachments=_attachment_count(data.get(b"BODYSTRUCTURE")),
    )


def _attachment_count(structure: object) -> int | None:
    if structure is None:
        return None
    try:  # hostile mail may break the parser in a way nobody listed: the count is then not known
        return len(attachments(parse_structure(structure)))
    except Exception:
        return None


def facts_lines(facts: SourceFacts, count: int, mailbox: str, clock: DialogClock) -> tuple[str, ...]:
    """The dialog's lines about the `count` messages of `mailbox` a change takes."""
    whole = f" of the {facts.mailbox_messages} messages" if facts.mailbox_messages is not None else ""
    now = clock.now()
    lines = [
        f"These are {count}{whole} in {shown(mailbox)}. What the IMAP server knows of them (times in {clock.label()}):"
    ]
    lines += [f"- UID {message.uid}: {_described(message, now)}" for message in facts.messages]
    if count > len(facts.messages):
        lines.append(f"- and {count - len(facts.messages)} more")
    return tuple(lines)


def _described(message: MessageFacts, now: dt.datetime) -> str:
    if message.received is None and message.size is None:
        return "gone, or not described by the server"
    parts = [f"arrived {arrived(message.received, now)}" if message.received else "arrival not known"]
    parts.append(size_text(message.size) if message.size is not None else "size not known")
    parts.append("read" if b"\\seen" in message.flags else "unread")
    if b"\\flagged" in message.flags:
        parts.append("flagged")
    count = message.attachments
    parts.append("attachments not known" if count is None else f"{count or 'no'} attachment{'' if count == 1 else 's'}")
    return ", ".join(parts)
