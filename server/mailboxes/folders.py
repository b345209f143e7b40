"""Creating, renaming and deleting mailboxes.

Delete and rename are planned like message changes: `plan_folder_change` observes the mailbox
now and returns the exact `PlannedFolderChange` (for a delete, its UIDVALIDITY, UIDNEXT and message count, so
an approval does not cover mail that arrived or left afterwards, nor a re-created mailbox), and
`execute_folder_change` re-observes it and runs only if it is unchanged.

A mailbox with child mailboxes is not deleted: IMAP (RFC 3501, DELETE) would remove its messages
but keep its name as a parent of the children, so "delete" would only be half done. The request
is refused before anyone is asked, naming the children to delete first.

The mailbox is never selected when RENAME or DELETE is sent (`selection.leave`). An answer to CREATE,
RENAME or DELETE can still be lost or spoiled (a BYE, a NO after the fact, a dropped connection): the
change may have run. The caller is told just before the command goes out (`sending`), and then reads
back what is true now (`now_true`, a LIST) instead of guessing from the answer.
"""

from __future__ import annotations

import imaplib
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from imap_mcp.protocol.texts import needs_escape, shown
from imap_mcp.sealing import Scope, Target

from ..changes.messages import ChangeRefused, TargetChanged
from ..imap.mailboxes import (
    MailboxInfo,
    OutsideNamespaces,
    check_new_name,
    delete_mailbox,
    list_mailboxes,
)
from ..imap.pool import NoSuchMailbox
from ..imap.selection import leave
from ..imap.session import Session
from ..imap.uidvalidity import settle

FolderOperation = Literal["delete_mailbox", "rename_mailbox"]
#: every change of a mailbox itself, as the change log names it
MailboxOperation = FolderOperation | Literal["create_mailbox"]
_STATUS = [b"UIDVALIDITY", b"UIDNEXT", b"MESSAGES"]


SHOWN_CHILDREN = 5


@dataclass(frozen=True)
class PlannedFolderChange:
    """Exactly what a person is asked to approve: `mailbox` as it is now (UIDVALIDITY; for a delete also
    UIDNEXT and the message count) and, for a rename, `new_name`. None where the mailbox holds no messages."""

    operation: FolderOperation
    account: str
    mailbox: str
    uidvalidity: int | None = None
    new_name: str | None = None
    uidnext: int | None = None
    messages: int | None = None

    @property
    def target(self) -> Target:
        """What the approval is sealed to: the mailbox with the numbers that pin its state, and the new name."""
        pinned = tuple(n for n in (self.uidvalidity, self.uidnext, self.messages) if n is not None)
        scopes = [Scope("mailbox", self.mailbox, pinned)]
        if self.new_name is not None:
            scopes.append(Scope("new_name", self.new_name))
        return Target(self.operation, self.account, tuple(scopes))


def _children(client: Session, name: str) -> list[str]:
    """The names of the mailboxes below `name` in the hierarchy."""
    boxes = list_mailboxes(client)
    found: MailboxInfo | None = next((m for m in boxes if m.name == name), None)
    if found is None or not found.delimiter:
        return []
    prefix = name + found.delimiter
    return sorted(m.name for m in boxes if m.name.startswith(prefix))


def _refuse_a_parent(client: Session, name: str) -> None:
    children = _children(client, name)
    if children:
        shown = ", ".join(repr(c) for c in children[:SHOWN_CHILDREN])
        if len(children) > SHOWN_CHILDREN:
            shown += ", …"
        raise ChangeRefused(
            f"The mailbox {name!r} has {len(children)} child mailbox(es) ({shown}); the IMAP server would keep "
            f"{name!r} as their parent, so it cannot be deleted as a whole. Nothing was changed and nobody was "
            f"asked. Delete the child mailboxes first (or rename them elsewhere), then delete {name!r}."
        )


def refuse_unsafe_characters(name: str) -> None:
    """Refuse a new name holding a character an approval dialog would have to escape (a line or paragraph
    separator, a control, a bidirectional or other invisible format character). Spaces of every kind are
    allowed: a dialog shows those other than U+0020 escaped."""
    unsafe = sorted({char for char in name if needs_escape(char) and unicodedata.category(char) != "Zs"})
    if unsafe:
        codes = ", ".join(f"U+{ord(char):04X}" for char in unsafe)
        raise ChangeRefused(
            f"The mailbox name {shown(name)} contains {codes}: line breaks, control, bidirectional and other "
            "invisible characters are not allowed in a new mailbox name, because such a name could pose as other "
            "text in an approval dialog. Nothing was changed; choose a name without them."
        )


def _listed(client: Session, name: str) -> bool | None:
    """None when `name` does not exist; else whether it can hold messages."""
    found = next((m for m in list_mailboxes(client) if m.name == name), None)
    return None if found is None else found.selectable


def _status(client: Session, name: str) -> dict[bytes, int] | None:
    """UIDVALIDITY, UIDNEXT and MESSAGES of `name`; None for a folder that holds no messages."""
    selectable = _listed(client, name)
    if selectable is None:
        raise NoSuchMailbox(f"Mailbox {name!r} does not exist; list_mailboxes shows the names.")
    if not selectable:
        return None
    settle(client, name)
    return {key: int(value) for key, value in client.folder_status(name, _STATUS).items()}


def plan_folder_change(
    client: Session, account: str, operation: FolderOperation, mailbox: str, new_name: str | None
) -> PlannedFolderChange:
    """The exact plan for deleting or renaming `mailbox` now, or `ChangeRefused` / `NoSuchMailbox`."""
    if mailbox.upper() == "INBOX":
        raise ChangeRefused("INBOX cannot be deleted or renamed; nothing was changed.")
    status = _status(client, mailbox)
    if operation == "delete_mailbox":
        _refuse_a_parent(client, mailbox)
    if operation == "rename_mailbox":
        if not new_name:
            raise ChangeRefused("A rename needs new_name: the full new name of the mailbox.")
        refuse_unsafe_characters(new_name)
        _refuse_outside_namespaces(client, new_name)
        if _listed(client, new_name) is not None:
            raise ChangeRefused(f"A mailbox named {new_name!r} already exists; choose another new_name.")
    return PlannedFolderChange(
        operation=operation,
        account=account,
        mailbox=mailbox,
        uidvalidity=status[b"UIDVALIDITY"] if status else None,
        new_name=new_name if operation == "rename_mailbox" else None,
        uidnext=status[b"UIDNEXT"] if status and operation == "delete_mailbox" else None,
        messages=status[b"MESSAGES"] if status and operation == "delete_mailbox" else None,
    )


def execute_folder_change(client: Session, target: PlannedFolderChange, sending: Callable[[], None]) -> None:
    """Delete or rename exactly the approved mailbox; `TargetChanged` if it is not as it was. `sending` is called
    just before the command goes out: from then on, a failure may hide a change that ran."""
    try:
        now = plan_folder_change(client, target.account, target.operation, target.mailbox, target.new_name)
    except (NoSuchMailbox, ChangeRefused) as exc:
        raise TargetChanged(f"{exc} Nothing was changed.") from None
    if now != target:
        raise TargetChanged(
            f"The mailbox {target.mailbox!r} changed since the change was approved (new mail, or it was re-created). "
            "Nothing was changed; call the tool again to be asked anew."
        )
    leave(client, target.mailbox)
    sending()
    if target.operation == "delete_mailbox":
        delete_mailbox(client, target.mailbox)
    else:
        assert target.new_name is not None, "a rename is planned with its new name"
        client.rename_folder(target.mailbox, target.new_name)


def now_true(client: Session, operation: MailboxOperation, mailbox: str, new_name: str | None) -> bool | None:
    """Whether the change is what the server shows now (LIST): True when it is done, False when nothing of it
    happened, None when the server shows neither (a rename whose two names both exist, or neither)."""
    names = {found.name for found in list_mailboxes(client)}
    if operation == "create_mailbox":
        return mailbox in names
    if operation == "delete_mailbox":
        return mailbox not in names
    old, new = mailbox in names, new_name in names
    return None if old == new else new


def _refuse_outside_namespaces(client: Session, name: str) -> None:
    try:
        check_new_name(client, name)
    except OutsideNamespaces as exc:
        raise ChangeRefused(str(exc)) from None


def create_folder(client: Session, name: str, sending: Callable[[], None]) -> None:
    """CREATE `name`; `sending` is called just before the command goes out (see the module)."""
    refuse_unsafe_characters(name)
    _refuse_outside_namespaces(client, name)
    if _listed(client, name) is not None:
        raise ChangeRefused(f"A mailbox named {name!r} already exists; nothing was changed.")
    sending()
    try:
        client.create_folder(name)
    except imaplib.IMAP4.abort:
        raise  # the connection dropped, not a refusal
    except imaplib.IMAP4.error as exc:
        raise ChangeRefused(f"The IMAP server refused to create {name!r}: {exc}") from None
