"""The IMAP side of sending: the original of a reply, the Sent mailbox as the record of what was sent, `\\Answered`.

Each function takes a logged-in `IMAPClient` and is meant to run through `ImapPool.run`;
`claim_sent_copy` and `append_sent_copy` must run with `retry=False` (an APPEND run twice leaves
two copies).

The Sent mailbox is also the arbiter between attempts of one approved send (see
`tools/sending.py`): each attempt first files its copy marked `SENDING` (`claim_sent_copy`), and
only the attempt whose copy has the lowest UID among those with its Message-ID sends
(`contend_for_send`, which marks that copy `HANDED_OVER` just before the message goes to SMTP);
the others remove exactly their own copy (`remove_sent_copy`).

An attempt that died leaves its copy marked `SENDING`. Once older than the claim lifetime
(measured against the contending attempt's own copy, both INTERNALDATEs of the server's clock)
it is resolved by the next attempt (`resolve_stale_copies`): without `HANDED_OVER` nothing was
sent and the copy is removed, so the send can run; with it the message may have gone out, so the
copy stays as the record, marked `UNCONFIRMED` instead of `SENDING`, and nothing is sent again.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from imapclient import IMAPClient

from imap_mcp.server.errors import MailboxError
from imap_mcp.server.imap.connection import append
from imap_mcp.server.imap.mailboxes import mailbox_with_role, missing_role_advice
from imap_mcp.server.imap.message_ids import MessageRef, StaleMessageId, check_uidvalidity
from imap_mcp.server.outgoing.reply import HEADER_FIELDS, Original, parse_original
from imap_mcp.server.reading.reader import MessageGone

SEEN = b"\\Seen"
ANSWERED = b"\\Answered"
DELETED = b"\\Deleted"
#: the keyword of a Sent copy whose message is being sent right now (or whose attempt was interrupted)
SENDING = b"$ImapMcpSending"
#: with SENDING: the message has been (or is being) handed to SMTP, so it may have been sent
HANDED_OVER = b"$ImapMcpHandedOver"
#: instead of SENDING: the attempt ended without SMTP's answer; the message was probably sent
UNCONFIRMED = b"$ImapMcpUnconfirmed"
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
    """The name of the mailbox with the Sent role (`mailbox_with_role`), or `NoSentMailbox`."""
    found = mailbox_with_role(client, "sent")
    if found is None:
        raise NoSentMailbox(
            "The account has no Sent mailbox (none is marked \\Sent or named like one), so imap-mcp cannot keep "
            f"the record that makes a repeated call send nothing more. {missing_role_advice(client, 'sent')}"
        )
    return found


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
    unconfirmed: bool = False


def claim_sent_copy(client: IMAPClient, mailbox: str, message: bytes, when: dt.datetime) -> MessageRef | None:
    """File `message` in `mailbox`, read and marked `SENDING`, and return where it is (APPENDUID, RFC 4315).

    None, with nothing filed, when the server does not offer UIDPLUS: without the new copy's UID the
    attempts of one send cannot be told apart.
    """
    if not client.has_capability("UIDPLUS"):
        return None
    response = append(client, mailbox, message, (SEEN, SENDING), when)
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
    return SentCopy(first, SENDING in flags, UNCONFIRMED in flags)


def contend_for_send(client: IMAPClient, copy: MessageRef, message_id: str, lifetime: float) -> SentCopy | None:
    """The earliest copy with this Message-ID once stale ones are resolved; if it is `copy`, `copy` is marked
    `HANDED_OVER` (its attempt sends next). None when `copy` itself is gone."""
    if not resolve_stale_copies(client, copy, message_id, lifetime):
        return None
    earliest = earliest_copy(client, copy.mailbox, message_id)
    if earliest is not None and earliest.uid == copy.uid:
        select_message_mailbox(client, copy, readonly=False)
        client.add_flags([copy.uid], [HANDED_OVER], silent=True)
    return earliest


def resolve_stale_copies(client: IMAPClient, copy: MessageRef, message_id: str, lifetime: float) -> bool:
    """Resolve the copies still marked `SENDING` that are older than `lifetime` seconds before `copy`
    (see the module docstring); False when `copy` itself is gone."""
    select_message_mailbox(client, copy, readonly=False)
    uids = client.search(["HEADER", "Message-ID", message_id])
    fetched = client.fetch(uids, ["FLAGS", "INTERNALDATE"]).items() if uids else ()
    # unsolicited FETCH responses (another session changing flags) come back too: only answers count
    found = {uid: data for uid, data in fetched if b"INTERNALDATE" in data and b"FLAGS" in data}
    if copy.uid not in found:
        return False
    oldest_live = found[copy.uid][b"INTERNALDATE"] - dt.timedelta(seconds=lifetime)
    stale = [uid for uid, data in found.items() if SENDING in data[b"FLAGS"] and data[b"INTERNALDATE"] < oldest_live]
    unsent = [uid for uid in stale if HANDED_OVER not in found[uid][b"FLAGS"]]
    maybe_sent = [uid for uid in stale if uid not in unsent]
    if unsent:
        client.add_flags(unsent, [DELETED], silent=True)
        client.uid_expunge(unsent)
    if maybe_sent:
        client.add_flags(maybe_sent, [UNCONFIRMED], silent=True)
        client.remove_flags(maybe_sent, [SENDING, HANDED_OVER], silent=True)
    return True


def record_unconfirmed(client: IMAPClient, copy: MessageRef) -> None:
    """SMTP's answer to the message of `copy` was lost: keep the copy as the record, marked `UNCONFIRMED`."""
    select_message_mailbox(client, copy, readonly=False)
    client.add_flags([copy.uid], [UNCONFIRMED], silent=True)
    client.remove_flags([copy.uid], [SENDING, HANDED_OVER], silent=True)


def finish_sent_copy(client: IMAPClient, copy: MessageRef) -> None:
    """The message of `copy` has been sent: clear its `SENDING` and `HANDED_OVER` marks."""
    select_message_mailbox(client, copy, readonly=False)
    client.remove_flags([copy.uid], [SENDING, HANDED_OVER], silent=True)


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
    append(client, mailbox, message, (SEEN,), when)


def mark_answered(client: IMAPClient, ref: MessageRef) -> None:
    """Flag the original of a reply `\\Answered` (a no-op if it is gone meanwhile)."""
    select_message_mailbox(client, ref, readonly=False)
    client.add_flags([ref.uid], [ANSWERED], silent=True)
