"""What a person approves before mail is sent, and the target its approval is bound to.

The sealed `Target` of a send names the account, the `sender` scope and, as `content`, a digest
of everything the message is made of: sender, the sorted to, cc and bcc addresses, the subject,
the SHA-256 of the body and the threading headers. A reply instead has the `original` scope (its
mailbox, pinned by UIDVALIDITY) and the original's UID as its one item. Any change to any of
them is another target, so the approval given for one message never sends another: the person
is asked again.
"""

from __future__ import annotations

import hashlib
import json

from imap_mcp.protocol import ApprovalRequest
from imap_mcp.protocol.texts import shown, word
from imap_mcp.sealing import Scope, Target

from ..imap.message_ids import MessageRef
from .compose import Draft, describe_for_approval
from .drafts import DraftToSend

SEND_OPERATION = "send"
REPLY_OPERATION = "reply"
DRAFT_OPERATION = "send_draft"
NOT_SHOWN_NOTE = (
    "Recipients, subject and body come from the caller (the AI assistant's request); display names are not shown, "
    "and the body is not shown here: ask the assistant to show it to you before approving."
)
#: for a reply only the body is the caller's: recipients and subject come from the original message
REPLY_NOT_SHOWN_NOTE = (
    "The recipients come from the original message's headers, as its sender wrote them (Reply-To or From; also "
    "To and Cc for a reply to all, or when this account sent the original); the body comes from the caller (the "
    "AI assistant's request). Display names are not shown, and the body is not shown here: ask the assistant to "
    "show it to you before approving."
)


def content_digest(draft: Draft) -> str:
    """SHA-256 over the canonical JSON of everything the message is made of."""
    content = {
        "from": draft.sender.addr_spec.lower(),
        **draft.recipients.bound(),
        "subject": draft.subject,
        "body_sha256": draft.body_sha256,
        "in_reply_to": draft.in_reply_to,
        "references": list(draft.references),
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def send_target(account: str, draft: Draft, original: MessageRef | None = None) -> Target:
    """The exact target of sending `draft` (as a reply to `original`, if given)."""
    if original is None:
        return Target(
            operation=SEND_OPERATION,
            account=account,
            scopes=(Scope("sender", draft.sender.addr_spec.lower()),),
            content=content_digest(draft),
        )
    return Target(
        operation=REPLY_OPERATION,
        account=account,
        scopes=(Scope("original", original.mailbox, (original.uidvalidity,)),),
        items=(original.uid,),
        content=content_digest(draft),
    )


def summary_of(draft: Draft, original: MessageRef | None) -> str:
    """One line for results and refusals: what was (or was not) sent, to how many."""
    count = len(draft.recipients.everyone)
    people = f"{count} recipient{'s' if count != 1 else ''}"
    if original is None:
        return f"send an email to {people}"
    return f"reply to message UID {original.uid} in {shown(original.mailbox)}, to {people}"


def send_request(tool: str, account: str, draft: Draft, original: MessageRef | None = None) -> ApprovalRequest:
    """The approval request for sending `draft`: a dialog always, never only a token."""
    question = "\n".join(
        [
            describe_for_approval(draft, reply_in=original.mailbox if original else None),
            f"Account: {word(account)}",
            NOT_SHOWN_NOTE if original is None else REPLY_NOT_SHOWN_NOTE,
        ]
    )
    return ApprovalRequest(
        tool=tool, target=send_target(account, draft, original), question=question, summary=summary_of(draft, original)
    )


DRAFT_NOT_SHOWN_NOTE = (
    "The draft was saved in the mailbox, where anyone who can write there (a mail client, a person, the assistant) "
    "may have written it. Display names are not shown, and its text is not shown here: open the draft to read it "
    "before approving."
)


def draft_target(account: str, draft: DraftToSend) -> Target:
    """The exact target of sending a saved draft: the draft (its mailbox at its UIDVALIDITY, its UID) and, as
    content, its recipients and subject as read and a digest of every byte of it; an edited draft is another."""
    content = {**draft.recipients.bound(), "subject": draft.subject, "draft": draft.digest}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return Target(
        operation=DRAFT_OPERATION,
        account=account,
        scopes=(Scope("draft", draft.ref.mailbox, (draft.ref.uidvalidity,)),),
        items=(draft.ref.uid,),
        content="sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
    )


def send_draft_request(tool: str, account: str, draft: DraftToSend, sender: str) -> ApprovalRequest:
    """The approval request for sending a saved draft: a dialog always."""
    count = len(draft.recipients.everyone)
    lines = [
        f"Send the draft UID {draft.ref.uid} in {shown(draft.ref.mailbox)} from {word(sender)} to {count} "
        f"recipient{'s' if count != 1 else ''}?"
    ]
    for name, group in draft.recipients.lists():
        if group:
            lines.append(f"{name.capitalize()}: {', '.join(word(a.addr_spec) for a in group)}")
    lines += [
        f"Subject, as the draft says: {shown(draft.subject)}",
        f"Body: {draft.text_chars} characters; {draft.attachments} attachment(s).",
        f"Account: {word(account)}",
        DRAFT_NOT_SHOWN_NOTE,
    ]
    summary = f"send the draft UID {draft.ref.uid} in {shown(draft.ref.mailbox)}, to {count} recipient" + (
        "s" if count != 1 else ""
    )
    return ApprovalRequest(
        tool=tool, target=draft_target(account, draft), question="\n".join(lines), summary=summary, pinned=draft.ref.id
    )
