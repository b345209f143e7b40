"""MkDocs hook: the example dialogs of `asking.md`, written at every build by the code that writes them for a person.

A page line `<!-- DIALOG: name -->` becomes that dialog as a person reads it (`EXAMPLES`): the question the server
builds (`changes.questions`, `outgoing.approval`), what it knows of the target (`changes.facts`, `outgoing.known`)
and the second confirmation of the operator's policy, put together by `protocol.texts.dialog_message` as the guard
does. Only what the IMAP server would have answered is made up here (arrival times, sizes, flags, which recipients
Sent knows), so the text cannot drift from what a server shows.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

DIALOG = re.compile(r"^<!-- DIALOG: ([a-z-]+) -->$", re.M)
#: the account and the clock of the examples (times shown in UTC)
ACCOUNT = "me@example.org@imap.example.org:993"


def move_of_three() -> str:
    """A move of three messages from INBOX (of 214) to Archive."""
    from imap_mcp.protocol.local_time import DialogClock
    from imap_mcp.protocol.texts import dialog_message
    from imap_mcp.server.changes.facts import MessageFacts, SourceFacts, facts_lines
    from imap_mcp.server.changes.messages import PlannedMessageChange
    from imap_mcp.server.changes.questions import message_change_request

    clock = DialogClock("UTC")
    now = clock.now()
    today = now.replace(hour=9, minute=14) if now.hour >= 10 else now - dt.timedelta(minutes=40)
    plan = PlannedMessageChange("move", ACCOUNT, "INBOX", 1796390334, (4, 9, 12), "Archive", 1796390335)
    facts = SourceFacts(
        214,
        (
            MessageFacts(4, today, 12_700, frozenset({b"\\seen", b"\\flagged"}), 2),
            MessageFacts(9, now - dt.timedelta(days=1, hours=2), 3_480, frozenset(), 0),
            MessageFacts(
                12, dt.datetime(now.year - 1, 11, 3, 8, 5, tzinfo=dt.UTC), 1_870_000, frozenset({b"\\seen"}), 1
            ),
        ),
    )
    question = message_change_request("move_messages", plan).question
    return dialog_message(question, facts_lines(facts, 3, "INBOX", clock), None)


def send_to_known_and_new() -> str:
    """A new message to one recipient Sent knows and one it does not, with IMAP_MCP_SEND_CONFIRM_NEW=true."""
    from email.headerregistry import Address

    from imap_mcp.protocol.texts import dialog_message
    from imap_mcp.server.outgoing.approval import send_request
    from imap_mcp.server.outgoing.compose import Draft, Recipients
    from imap_mcp.server.outgoing.known import RecipientsSeen, recipient_lines, second_confirmation
    from imap_mcp.server.outgoing.wire import FileToSend, Payload

    known, new = "bob@example.com", "carol@partner.example"
    report = FileToSend("q3-figures.pdf", "application/pdf", Payload(b"%PDF-1.7 the figures\n" * 400))
    draft = Draft(
        sender=Address(addr_spec="me@example.org"),
        recipients=Recipients(to=(Address(addr_spec=known),), cc=(Address(addr_spec=new),)),
        subject="Q3 figures",
        body="Hi Bob, hi Carol,\n\nthe figures are attached.\n",
        attachments=(report,),
    )
    question = send_request("send_message", ACCOUNT, draft).question
    seen = RecipientsSeen({known: "known", new: "new"}, sent="Sent")
    recipients = (known, new)
    return dialog_message(question, tuple(recipient_lines(seen, recipients)), second_confirmation(seen, recipients))


EXAMPLES: dict[str, Callable[[], str]] = {
    "move-of-three": move_of_three,
    "send-to-known-and-new": send_to_known_and_new,
}


def dialog_block(name: str) -> str:
    if name not in EXAMPLES:
        raise ValueError(f"asking.md names the dialog {name!r}, which docs/dialog_hooks.py does not write")
    return "```text\n" + EXAMPLES[name]() + "\n```"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return DIALOG.sub(lambda found: dialog_block(found.group(1)), markdown)
