"""The IMAP side of sending: the original of a reply, the Sent mailbox as the record of what was sent, `\\Answered`.

Each function takes a logged-in `IMAPClient` and is meant to run through `ImapPool.run`;
`append_sent_copy` must run with `retry=False` (an APPEND run twice leaves two copies).
"""

from __future__ import annotations

import datetime as dt

from imapclient import IMAPClient

from .mailboxes import list_mailboxes
from .message_ids import MessageRef, check_uidvalidity
from .message_reader import MessageGone
from .outgoing_reply import HEADER_FIELDS, Original, parse_original

SEEN = b"\\Seen"
ANSWERED = b"\\Answered"
_HEADER_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(f.upper() for f in HEADER_FIELDS)})]"


class NoSentMailbox(LookupError):
    """The account has no mailbox with the Sent role."""


def select_message_mailbox(client: IMAPClient, ref: MessageRef, readonly: bool) -> None:
    """Select the mailbox of `ref`, refusing a stale id (`StaleMessageId`)."""
    status = client.select_folder(ref.mailbox, readonly=readonly)
    check_uidvalidity(ref, int(status[b"UIDVALIDITY"]))


def fetch_original(client: IMAPClient, ref: MessageRef) -> Original:
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


def sent_mailbox(client: IMAPClient) -> str:
    """The name of the mailbox with the Sent role (RFC 6154), or `NoSentMailbox`."""
    for mailbox in list_mailboxes(client):
        if mailbox.role == "sent" and mailbox.selectable:
            return mailbox.name
    raise NoSentMailbox(
        "The account has no Sent mailbox (none is marked \\Sent), so imap-mcp cannot keep the record that "
        "makes a repeated call send nothing more. Ask the mail administrator to mark one as \\Sent."
    )


def sent_copy_exists(client: IMAPClient, mailbox: str, message_id: str) -> bool:
    """Whether `mailbox` already holds a message with this Message-ID (the sign that it was sent)."""
    client.select_folder(mailbox, readonly=True)
    return bool(client.search(["HEADER", "Message-ID", message_id]))


def append_sent_copy(client: IMAPClient, mailbox: str, message: bytes, when: dt.datetime) -> None:
    """File the sent message in `mailbox`, already read."""
    client.append(mailbox, message, flags=(SEEN,), msg_time=when)


def mark_answered(client: IMAPClient, ref: MessageRef) -> None:
    """Flag the original of a reply `\\Answered` (a no-op if it is gone meanwhile)."""
    select_message_mailbox(client, ref, readonly=False)
    client.add_flags([ref.uid], [ANSWERED], silent=True)
