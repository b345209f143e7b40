"""The IMAP side of sending: the original of a reply, the Sent mailbox as the record of what was sent, `\\Answered`.

Each function takes a logged-in `IMAPClient` and is meant to run through `ImapPool.run`;
`claim_sent_copy` and `append_sent_copy` must run with `retry=False` (an APPEND run twice leaves
two copies).

The Sent mailbox is also the arbiter between attempts of one approved send (see
`tools/sending.py`): each attempt first files its copy marked `SENDING` (`claim_sent_copy`), and
only the attempt whose copy has the lowest UID among those with its Message-ID sends
(`earliest_copy`); the others remove exactly their own copy (`remove_sent_copy`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from imapclient import IMAPClient

from imap_mcp.server.errors import MailboxError
from imap_mcp.server.imap.mailboxes import list_mailboxes
from imap_mcp.server.imap.message_ids import MessageRef, StaleMessageId, check_uidvalidity
from imap_mcp.server.outgoing.reply import HEADER_FIELDS, Original, parse_original
from imap_mcp.server.reading.reader import MessageGone

SEEN = b"\\Seen"
ANSWERED = b"\\Answered"
DELETED = b"\\Deleted"
#: the keyword of a Sent copy whose message is being sent right now (or whose attempt was interrupted)
SENDING = b"$ImapMcpSending"
_APPENDUID = re.compile(rb"\[APPENDUID (\d+) (\d+)\]")
_HEADER_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(f.upper() for f in HEADER_FIELDS)})]"


class NoSentMailbox(MailboxError, LookupError):
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


class NoAppendUid(MailboxError):
    """The server took the in-progress copy but did not say its UID, although it offers UIDPLUS."""


@dataclass(frozen=True)
class SentCopy:
    """The earliest copy in Sent with a given Message-ID, and whether its message is still being sent."""

    uid: int
    in_progress: bool


def claim_sent_copy(client: IMAPClient, mailbox: str, message: bytes, when: dt.datetime) -> MessageRef | None:
    """File `message` in `mailbox`, read and marked `SENDING`, and return where it is (APPENDUID, RFC 4315).

    None, with nothing filed, when the server does not offer UIDPLUS: without the new copy's UID the
    attempts of one send cannot be told apart.
    """
    if not client.has_capability("UIDPLUS"):
        return None
    response = client.append(mailbox, message, flags=(SEEN, SENDING), msg_time=when)
    found = _APPENDUID.search(response if isinstance(response, bytes) else b"")
    if found is None:
        raise NoAppendUid(
            f"The IMAP server filed the copy in {mailbox!r} but did not report its UID (APPENDUID), although it "
            f"offers UIDPLUS; nothing was sent. Remove the copy marked {SENDING.decode()} from {mailbox!r} and try "
            "again, or ask the mail administrator about APPENDUID."
        )
    return MessageRef(mailbox, int(found.group(1)), int(found.group(2)))


def earliest_copy(client: IMAPClient, mailbox: str, message_id: str) -> SentCopy | None:
    """The copy in `mailbox` with this Message-ID that has the lowest UID (the one filed first), if any."""
    client.select_folder(mailbox, readonly=True)
    uids = client.search(["HEADER", "Message-ID", message_id])
    if not uids:
        return None
    first = min(uids)
    flags = client.get_flags([first]).get(first, ())
    return SentCopy(first, SENDING in flags)


def finish_sent_copy(client: IMAPClient, copy: MessageRef) -> None:
    """The message of `copy` has been sent: clear its `SENDING` mark."""
    select_message_mailbox(client, copy, readonly=False)
    client.remove_flags([copy.uid], [SENDING], silent=True)


def remove_sent_copy(client: IMAPClient, copy: MessageRef) -> None:
    """Expunge exactly `copy` (`\\Deleted` + `UID EXPUNGE` of its UID); nothing if its mailbox was re-created."""
    try:
        select_message_mailbox(client, copy, readonly=False)
    except StaleMessageId:
        return
    client.add_flags([copy.uid], [DELETED], silent=True)
    client.uid_expunge([copy.uid])


def append_sent_copy(client: IMAPClient, mailbox: str, message: bytes, when: dt.datetime) -> None:
    """File the sent message in `mailbox`, already read."""
    client.append(mailbox, message, flags=(SEEN,), msg_time=when)


def mark_answered(client: IMAPClient, ref: MessageRef) -> None:
    """Flag the original of a reply `\\Answered` (a no-op if it is gone meanwhile)."""
    select_message_mailbox(client, ref, readonly=False)
    client.add_flags([ref.uid], [ANSWERED], silent=True)
