"""Glue between the settings and `protocol.Guard`: the key ring, the start lines, the dialog texts.

The questions hold counts, UIDs, mailbox names and the account, never a subject or a body (those
are written by whoever sent the mail, and a dialog must not become their voice). They say which
values the caller supplied (mailbox names, UIDs) and which the IMAP server did (the Trash
mailbox, message counts), and what the change does to the mailbox.
"""

from __future__ import annotations

import json

from mcp.server.request_state import authenticated_principal

from imap_mcp.protocol import ApprovalRequest, Guard, PrincipalHook
from imap_mcp.sealing import KeyRing, Target
from imap_mcp.server.config import Settings
from imap_mcp.server.imap.uid_sets import compress

ELICITATION_OFF_LINE = "ELICITATION=false — guarded tools fall back to the two-call token"
EPHEMERAL_KEY_LINE = (
    "IMAP_MCP_SEAL_KEYS is not set — approvals are sealed with a random key of this process, so other "
    "replicas (and this one after a restart) will ask again"
)
SHOWN_UIDS_MAX = 200
CALLER = "the AI assistant's request"
NOT_SHOWN = "Subjects and contents are not shown."


def build_guard(settings: Settings, principal: PrincipalHook = authenticated_principal) -> Guard:
    """The guard for `settings`: the configured key ring, or a random one for this process."""
    ring = KeyRing([k.reveal() for k in settings.seal_keys]) if settings.seal_keys else KeyRing.random()
    return Guard(ring, elicitation=settings.elicitation, principal=principal)


def start_lines(settings: Settings, http: bool) -> list[str]:
    """What the server says once at start about how it asks (each becomes one `imap-mcp: ...` line).

    The random-key warning only over HTTP, where replicas and restarts share clients; a stdio
    process is its client's only server, and a restart loses nothing a person would miss.
    """
    lines = [EPHEMERAL_KEY_LINE] if http and not settings.seal_keys else []
    if not settings.elicitation:
        lines.append(ELICITATION_OFF_LINE)
    return lines


def quoted(name: str) -> str:
    """A mailbox name as a JSON string: control characters escaped, so a name cannot forge lines."""
    return json.dumps(name, ensure_ascii=False)


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


def _message_provenance(operation: str, destination: str) -> str:
    if operation == "trash":
        trash = f"the Trash mailbox {destination}, and that the UIDs exist"
        return provenance("the source mailbox and the UIDs", trash)
    names = "the mailbox name" if operation == "delete_permanently" else "the mailbox names"
    return provenance(f"{names} and the UIDs", "that the UIDs exist")


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


def message_change_request(tool: str, target: Target) -> ApprovalRequest:
    """The approval request for moving, copying or deleting messages."""
    question, effect = _MESSAGE_CHANGES[target.operation]
    values = {
        "n": messages(len(target.uids)),
        "src": quoted(target.source),
        "dst": quoted(target.destination or ""),
    }
    uid_line = f"UIDs in {values['src']} (UIDVALIDITY {target.source_uidvalidity}): {shown_uids(target.uids)}"
    text = "\n".join(
        [
            question.format(**values),
            uid_line,
            effect.format(**values),
            f"Account: {target.account}",
            _message_provenance(target.operation, values["dst"]),
        ]
    )
    summary = (
        f"{target.operation.replace('_', ' ')} {values['n']} (UIDs {shown_uids(target.uids)}) from {values['src']}"
    )
    if target.destination and target.operation != "trash":
        summary += f" to {values['dst']}"
    return ApprovalRequest(tool=tool, target=target, question=text, summary=summary)


def delete_mailbox_request(tool: str, target: Target) -> ApprovalRequest:
    name = quoted(target.source)
    held = messages(target.source_messages or 0)
    text = "\n".join(
        [
            f"Delete the mailbox {name} and the {held} in it?",
            "This cannot be undone: the mailbox and every message in it are gone for good.",
            f"Account: {target.account}",
            provenance("the mailbox name", "the message count"),
        ]
    )
    return ApprovalRequest(tool=tool, target=target, question=text, summary=f"delete mailbox {name} ({held})")


def rename_mailbox_request(tool: str, target: Target) -> ApprovalRequest:
    summary = f"rename mailbox {quoted(target.source)} to {quoted(target.destination or '')}"
    return ApprovalRequest(tool=tool, target=target, question=summary, summary=summary, dialog=False)
