"""What a person approves before mail is sent, and the target its approval is bound to.

The sealed `Target` of a send names the account, the `sender` scope and, as `content`, a digest
of everything the message is made of: sender, the sorted to, cc and bcc addresses, the subject,
the SHA-256 of the body, the threading headers, and each attachment's name, type, size and SHA-256.
A reply (and a forward) instead has the `original` scope (its mailbox, pinned by UIDVALIDITY) and
the original's UID as its one item; a forward's content also binds a digest of what it forwards of
the original. Any change to any of them (a file changed between question and answer too) is
another target, so the approval given for one message never sends another: the person is asked
again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from imap_mcp.protocol import ApprovalRequest
from imap_mcp.protocol.texts import shown, word
from imap_mcp.sealing import Scope, Target

from ..imap.message_ids import MessageRef
from .compose import Draft, describe_for_approval
from .drafts import DraftToSend
from .formatting import Layout
from .forward import Forward
from .wire import FileToSend, describe_files

SEND_OPERATION = "send"
REPLY_OPERATION = "reply"
DRAFT_OPERATION = "send_draft"
FORWARD_OPERATION = "forward"
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


def bound_files(files: Sequence[FileToSend]) -> dict[str, list[dict[str, str | int]]]:
    """What an approval binds of the attachments, in order: each one's name, type, size and SHA-256 (nothing when
    there are none, so a message without attachments is bound as it always was)."""
    return {"attachments": [file.bound() for file in files]} if files else {}


def content_digest(draft: Draft) -> str:
    """SHA-256 over the canonical JSON of everything the message is made of."""
    content = {
        "from": draft.sender.addr_spec.lower(),
        **draft.recipients.bound(),
        "subject": draft.subject,
        "body_sha256": draft.body_sha256,
        **draft.bound_html(),
        "in_reply_to": draft.in_reply_to,
        "references": list(draft.references),
        **bound_files(draft.attachments),
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


def draft_target(account: str, draft: DraftToSend, files: Sequence[FileToSend] = ()) -> Target:
    """The exact target of sending a saved draft: the draft (its mailbox at its UIDVALIDITY, its UID) and, as
    content, its recipients and subject as read, a digest of every byte of it, and the attachments added to it; an
    edited draft, or another file, is another."""
    content = {**draft.recipients.bound(), "subject": draft.subject, "draft": draft.digest, **bound_files(files)}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return Target(
        operation=DRAFT_OPERATION,
        account=account,
        scopes=(Scope("draft", draft.ref.mailbox, (draft.ref.uidvalidity,)),),
        items=(draft.ref.uid,),
        content="sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
    )


def send_draft_request(
    tool: str, account: str, draft: DraftToSend, sender: str, files: Sequence[FileToSend] = ()
) -> ApprovalRequest:
    """The approval request for sending a saved draft (with `files` added to it): a dialog always."""
    count = len(draft.recipients.everyone)
    lines = [
        f"Send the draft UID {draft.ref.uid} in {shown(draft.ref.mailbox)} from {word(sender)} to {count} "
        f"recipient{'s' if count != 1 else ''}?"
    ]
    for name, group in draft.recipients.lists():
        if group:
            lines.append(f"{name.capitalize()}: {', '.join(word(a.addr_spec) for a in group)}")
    if draft.reply_to:
        lines.append(f"Reply-To (answers go there): {', '.join(word(a.addr_spec) for a in draft.reply_to)}")
    lines += [
        f"Subject, as the draft says: {shown(draft.subject)}",
        f"Body: {draft.text_chars} characters; {draft.attachments} attachment(s) in the draft.",
        *(f"Added by the assistant: {line}" if n == 0 else line for n, line in enumerate(describe_files(files))),
        f"Account: {word(account)}",
        DRAFT_NOT_SHOWN_NOTE,
    ]
    summary = f"send the draft UID {draft.ref.uid} in {shown(draft.ref.mailbox)}, to {count} recipient" + (
        "s" if count != 1 else ""
    )
    return ApprovalRequest(
        tool=tool,
        target=draft_target(account, draft, files),
        question="\n".join(lines),
        summary=summary,
        pinned=draft.ref.id,
    )


FORWARD_NOT_SHOWN_NOTE = (
    "The recipients and the note come from the caller (the AI assistant's request); the original was written by "
    "its sender. Display names are not shown, and neither the note nor the original is shown here: open the "
    "original, and ask the assistant to show you the note, before approving."
)
_MODES = {
    "inline": "its text quoted below the note, its attachments kept",
    "attachment": "the whole original attached as it is",
}


def forward_target(account: str, forward: Forward) -> Target:
    """The exact target of a forward: the original (its mailbox at its UIDVALIDITY, its UID) and, as content, the
    recipients, the note's digest, the mode and the digest of what is forwarded of the original (`forward`)."""
    draft, original = forward.draft, forward.original
    content = {
        "from": draft.sender.addr_spec.lower(),
        **draft.recipients.bound(),
        "subject": draft.subject,
        "body_sha256": draft.body_sha256,
        **draft.bound_html(),
        "mode": forward.mode,
        "original": original.digest,
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    ref = original.ref
    return Target(
        operation=FORWARD_OPERATION,
        account=account,
        scopes=(Scope("original", ref.mailbox, (ref.uidvalidity,)),),
        items=(ref.uid,),
        content="sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
    )


def forward_request(tool: str, account: str, forward: Forward, note_chars: int) -> ApprovalRequest:
    """The approval request for a forward: a dialog always."""
    draft, ref = forward.draft, forward.original.ref
    count = len(draft.recipients.everyone)
    people = f"{count} recipient{'s' if count != 1 else ''}"
    lines = [
        f"Forward the message UID {ref.uid} in {shown(ref.mailbox)} from {word(draft.sender.addr_spec)} to {people}?"
    ]
    for name, group in draft.recipients.lists():
        if group:
            lines.append(f"{name.capitalize()}: {', '.join(word(a.addr_spec) for a in group)}")
    lines += [
        "Subject: 'Fwd:' and the original message's subject (not shown here).",
        f"How: {_MODES[forward.mode]} ({forward.original.size} bytes of it).",
        *(draft.layout or Layout(written_chars=note_chars)).describe("Note"),
        *describe_files(draft.attachments),
        f"Account: {word(account)}",
        FORWARD_NOT_SHOWN_NOTE,
    ]
    summary = f"forward message UID {ref.uid} in {shown(ref.mailbox)}, to {people}"
    return ApprovalRequest(
        tool=tool, target=forward_target(account, forward), question="\n".join(lines), summary=summary
    )
