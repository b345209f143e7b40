"""The IMAP side of sending: the original of a reply, the Sent copy, `\\Answered` and `$Forwarded` — each reported as
kept.

Each function takes a logged-in `Session` and is meant to run through `ImapPool.run`;
`file_sent_copy` must run with `retry=False` (an APPEND run twice leaves two copies).

Nothing here decides whether a message is sent: that is the approval ledger's (`store.ledger`),
which neither a caller nor a server can forge or drop. The Sent copy is for the person.
"""

from __future__ import annotations

import datetime as dt

from ..errors import MailboxError
from ..imap.kept_flags import Appended, append_and_read_back, read_flags
from ..imap.mailboxes import mailbox_with_role, missing_role_advice
from ..imap.message_ids import MessageRef, check_uidvalidity
from ..imap.permanent_flags import holds
from ..imap.session import Session
from ..reading.reader import MessageGone
from .reply import HEADER_FIELDS, Original, parse_original

SEEN = b"\\Seen"
ANSWERED = b"\\Answered"
_HEADER_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(f.upper() for f in HEADER_FIELDS)})]"


class NoSentMailbox(MailboxError, LookupError):
    """The account has no mailbox with the Sent role."""


def select_message_mailbox(client: Session, ref: MessageRef, readonly: bool) -> None:
    """Select the mailbox of `ref`, refusing a stale id (`StaleMessageId`)."""
    status = client.select_folder(ref.mailbox, readonly=readonly)
    check_uidvalidity(ref, int(status[b"UIDVALIDITY"]))


def fetch_original(client: Session, ref: MessageRef) -> Original:
    """The reply-relevant headers of the message `ref` names, without marking it read."""
    select_message_mailbox(client, ref, readonly=True)
    fetched = client.fetch([ref.uid], [_HEADER_ITEM])
    if ref.uid not in fetched:
        raise MessageGone(
            f"The message {ref.id} is no longer in {ref.mailbox!r} (deleted or moved); search again for its new id."
        )
    data = fetched[ref.uid]
    headers = next((v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS")), b"")
    return parse_original(headers if isinstance(headers, bytes) else b"")


def sent_mailbox(client: Session) -> str:
    """The name of the mailbox with the Sent role (`mailbox_with_role`), or `NoSentMailbox`."""
    found = mailbox_with_role(client, "sent")
    if found is None:
        raise NoSentMailbox(
            "The account has no Sent mailbox (none is marked \\Sent or named like one) to file the copy in. "
            f"{missing_role_advice(client, 'sent')} Or send with save_to_sent: false (no copy is kept)."
        )
    return found


def file_sent_copy(client: Session, mailbox: str, message: bytes, when: dt.datetime, message_id: str) -> Appended:
    """File the sent message in `mailbox`, read (`\\Seen`), and report the flags the server kept."""
    return append_and_read_back(client, mailbox, message, (SEEN,), when, message_id)


def mark_original(client: Session, ref: MessageRef, flag: bytes) -> bool:
    """Flag the original of a reply `\\Answered` (of a forward `$Forwarded`); whether the server kept it, as read
    back (False if the message is gone, or the server keeps no such keyword)."""
    select_message_mailbox(client, ref, readonly=False)
    client.add_flags([ref.uid], [flag], silent=True)
    return holds(read_flags(client, [ref.uid]).get(ref.uid, frozenset()), flag)
