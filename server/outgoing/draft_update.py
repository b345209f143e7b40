"""Editing a draft in place (`update_draft`): the new content APPENDed, then the old draft removed.

A draft this server saved (recorded in the store with a digest of its bytes, `store.drafts`) is replaced without
asking: nothing a person wrote is lost. Any other draft, or one whose bytes no longer have the recorded digest,
may be a person's work in a mail client, so a person is asked first, as for a delete: the question names the draft
replaced (its mailbox, UIDVALIDITY, UID and size, never its text) and the new content as the assistant wrote it.
The approval binds the old draft's every byte and the new content, so another draft, or other content, is asked
about again.

The new draft is APPENDed first; only then is the old one removed (`\\Deleted` and `UID EXPUNGE` of exactly it,
which needs UIDPLUS). Where it cannot be removed (no UIDPLUS, or the server failed), the new draft stays saved and
the old one stays in Drafts: the result says so, with the new id, and never reports the old one removed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from email.message import EmailMessage

from imap_mcp.protocol import ApprovalRequest
from imap_mcp.protocol.texts import shown, word
from imap_mcp.sealing import Scope, Target

from ..imap.message_ids import MessageRef
from ..imap.session import Session
from .approval import bound_files
from .compose import Recipients
from .drafts import bytes_digest, draft_bytes
from .wire import FileToSend, describe_files

UPDATE_OPERATION = "update_draft"
UPDATE_NOT_SHOWN_NOTE = (
    "The new recipients, subject and body come from the caller (the AI assistant's request); display names are "
    "not shown, and neither the old draft's text nor the new body is shown here: open the draft, and ask the "
    "assistant to show you the new text, before approving."
)


@dataclass(frozen=True)
class NewDraft:
    """The content a draft is replaced with: the message and its bytes as APPENDed, and what the question shows."""

    message: EmailMessage
    whole: bytes
    recipients: Recipients
    subject: str
    body: str
    files: tuple[FileToSend, ...]
    #: the Message-ID of the message a reply draft answers (its subject is that message's, not the caller's)
    in_reply_to: str | None = None
    #: the HTML alternative of a formatted draft (`body` is then its text alternative)
    html: str | None = None

    @property
    def content_digest(self) -> str:
        """What an approval binds of the new content: recipients, subject, body and attachments (not its Date or
        Message-ID, which each call writes anew)."""
        content = {
            **self.recipients.bound(),
            "subject": self.subject,
            "body_sha256": hashlib.sha256(self.body.encode()).hexdigest(),
            "in_reply_to": self.in_reply_to,
            **({"html_sha256": hashlib.sha256(self.html.encode()).hexdigest()} if self.html is not None else {}),
            **bound_files(self.files),
        }
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class OldDraft:
    """The draft to replace, as read now: where it is, its size and a digest of its every byte."""

    ref: MessageRef
    size: int
    digest: str
    #: whether the server can expunge exactly it (UIDPLUS); without, it stays in Drafts beside the new draft
    removable: bool = True


def read_old_draft(client: Session, ref: MessageRef) -> OldDraft:
    """The draft `ref` names, read whole (without marking it read); refused unless it is in the Drafts mailbox."""
    advice = "Save a new draft with save_draft instead."
    raw = draft_bytes(client, ref, "update_draft replaces", advice)
    return OldDraft(ref, len(raw), bytes_digest(raw), bool(client.has_capability("UIDPLUS")))


def update_target(account: str, old: OldDraft, new: NewDraft) -> Target:
    """The exact target of replacing `old` by `new`: the old draft (its mailbox at its UIDVALIDITY, its UID) and, as
    content, a digest of its every byte and of the new content."""
    content = {"old": old.digest, "new": new.content_digest}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    ref = old.ref
    return Target(
        operation=UPDATE_OPERATION,
        account=account,
        scopes=(Scope("draft", ref.mailbox, (ref.uidvalidity,)),),
        items=(ref.uid,),
        content="sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
    )


def update_request(tool: str, account: str, old: OldDraft, new: NewDraft, changed_since_saved: bool) -> ApprovalRequest:
    """The approval request for replacing a draft this server did not save (or one changed since it did)."""
    ref = old.ref
    why = (
        "Its content is no longer what this server saved there"
        if changed_since_saved
        else "This server did not save it"
    )
    if old.removable:
        effect = (
            f"It is removed from {shown(ref.mailbox)} for good (expunged: this cannot be undone) once the new draft "
            "is saved there in its place."
        )
    else:
        effect = "This server cannot expunge exactly one message (no UIDPLUS), so it stays there beside the new draft."
    lines = [
        f"Replace the draft UID {ref.uid} in {shown(ref.mailbox)} (UIDVALIDITY {ref.uidvalidity}, {old.size} bytes)?",
        f"{why}: a person or another mail client may have written it. {effect}",
        *_new_content_lines(new),
        f"Account: {word(account)}",
        UPDATE_NOT_SHOWN_NOTE,
    ]
    summary = f"replace the draft UID {ref.uid} in {shown(ref.mailbox)}"
    return ApprovalRequest(
        tool=tool, target=update_target(account, old, new), question="\n".join(lines), summary=summary
    )


def _new_content_lines(new: NewDraft) -> list[str]:
    count = len(new.recipients.everyone)
    lines = [f"The new draft, to {count} recipient{'s' if count != 1 else ''}:"]
    for name, group in new.recipients.lists():
        if group:
            lines.append(f"{name.capitalize()}: {', '.join(word(a.addr_spec) for a in group)}")
    if new.in_reply_to is not None:
        lines.append("Subject: 'Re:' and the subject of the message it answers (not shown here).")
    else:
        lines.append(f"Subject, as written by the assistant: {shown(new.subject)}")
    lines.append(f"Body, as written by the assistant: {len(new.body)} characters of plain text.")
    return lines + describe_files(new.files)
