"""The questions a person is asked before a mailbox is renamed or deleted (see `changes.questions` for the rules
every question follows: counts and names, never a subject or a body; who supplied each value)."""

from __future__ import annotations

from imap_mcp.protocol import ApprovalRequest
from imap_mcp.protocol.texts import shown, word

from ..changes.questions import messages, provenance
from .folders import PlannedFolderChange


def delete_mailbox_request(tool: str, plan: PlannedFolderChange) -> ApprovalRequest:
    name = shown(plan.mailbox)
    held = messages(plan.messages or 0)
    text = "\n".join(
        [
            f"Delete the mailbox {name} and the {held} in it?",
            "This cannot be undone: the mailbox and every message in it are gone for good.",
            "Mail delivered into it while it is being deleted is deleted with it (IMAP cannot prevent that).",
            f"Account: {word(plan.account)}",
            provenance("the mailbox name", "the message count"),
        ]
    )
    return ApprovalRequest(tool=tool, target=plan.target, question=text, summary=f"delete mailbox {name} ({held})")


def rename_mailbox_request(tool: str, plan: PlannedFolderChange) -> ApprovalRequest:
    summary = f"rename mailbox {shown(plan.mailbox)} to {shown(plan.new_name or '')}"
    return ApprovalRequest(tool=tool, target=plan.target, question=summary, summary=summary, dialog=False)
