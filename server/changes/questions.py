"""The questions a person is asked before messages change (a mailbox's: `mailboxes.questions`).

They hold counts, UIDs, mailbox names and the account, never a subject or a body (those are
written by whoever sent the mail, and a dialog must not become their voice). They say which
values the caller supplied (mailbox names, UIDs) and which the IMAP server did (the Trash
mailbox, message counts), and what the change does to the mailbox. Every name goes through
`protocol.texts.shown`, so none can add a line, hide text or reorder it.
"""

from __future__ import annotations

from imap_mcp.protocol import ApprovalRequest
from imap_mcp.protocol.texts import shown, word

from ..imap.uid_sets import compress
from .messages import PlannedMessageChange

SHOWN_UIDS_MAX = 200
CALLER = "the AI assistant's request"
NOT_SHOWN = "Subjects and contents are not shown."


def shown_uids(uids: tuple[int, ...]) -> str:
    text = compress(uids)
    if len(text) > SHOWN_UIDS_MAX:
        text = text[: text.rfind(",", 0, SHOWN_UIDS_MAX)] + ", …"
    return text


def messages(count: int) -> str:
    return f"{count} message" if count == 1 else f"{count} messages"


def provenance(caller: str, server: str) -> str:
    """Where the values in a question come from: the caller's request, or the IMAP server."""
    return f"Supplied by the caller ({CALLER}): {caller}. From the IMAP server: {server}. {NOT_SHOWN}"


def _message_provenance(operation: str, destination: str, by_query: bool) -> str:
    chosen, found = ("the search criteria", "which messages match") if by_query else ("the UIDs", "that the UIDs exist")
    if operation == "trash":
        return provenance(f"the source mailbox and {chosen}", f"the Trash mailbox {destination}, and {found}")
    names = "the mailbox name" if operation == "delete_permanently" else "the mailbox names"
    return provenance(f"{names} and {chosen}", found)


def criteria_line(criteria: tuple[tuple[str, str], ...]) -> str:
    """The search a change by query was chosen by, each value as the caller gave it."""
    if not criteria:
        return "Chosen by a search with no criteria: every message in the mailbox when asked."
    given = ", ".join(f"{name} {shown(value)}" for name, value in criteria)
    return f"Chosen by a search ({given}): only the messages that matched when asked, none that match later."


_MESSAGE_CHANGES = {
    # operation: (question, what it does)
    "trash": (
        "Move {n} from {src} to the Trash mailbox {dst}?",
        "They leave {src} and get new UIDs in {dst}, from where they can be restored until it is emptied.",
    ),
    "delete_permanently": (
        "Permanently delete {n} from {src}?",
        "This cannot be undone: the messages are expunged, not moved to Trash.",
    ),
    "move": (
        "Move {n} from {src} to {dst}?",
        "They leave {src} and get new UIDs in {dst}; their old ids stop working. Anyone who can read {dst} "
        "can read them.",
    ),
    "copy": (
        "Copy {n} from {src} to {dst}?",
        "The originals stay in {src}; the copies get new UIDs in {dst}, and anyone who can read {dst} can read them.",
    ),
}


def message_change_request(
    tool: str,
    plan: PlannedMessageChange,
    criteria: tuple[tuple[str, str], ...] | None = None,
    pinned: str = "",
) -> ApprovalRequest:
    """The approval request for moving, copying or deleting messages; `criteria` when a search chose them
    (`pinned`: the resolved set, carried sealed with the question)."""
    question, effect = _MESSAGE_CHANGES[plan.operation]
    values = {
        "n": messages(len(plan.uids)),
        "src": shown(plan.source),
        "dst": shown(plan.destination or ""),
    }
    uid_line = f"UIDs in {values['src']} (UIDVALIDITY {plan.source_uidvalidity}): {shown_uids(plan.uids)}"
    lines = [question.format(**values), uid_line]
    if criteria is not None:
        lines.append(criteria_line(criteria))
    lines += [
        effect.format(**values),
        f"Account: {word(plan.account)}",
        _message_provenance(plan.operation, values["dst"], criteria is not None),
    ]
    text = "\n".join(lines)
    summary = f"{plan.operation.replace('_', ' ')} {values['n']} (UIDs {shown_uids(plan.uids)}) from {values['src']}"
    if plan.destination and plan.operation != "trash":
        summary += f" to {values['dst']}"
    return ApprovalRequest(tool=tool, target=plan.target, question=text, summary=summary, pinned=pinned)
