"""One approved move, copy or trash-delete runs once, however many attempts run it at the same time.

Concurrent answers to one approval (a client retrying, a gateway sending twice, replicas that
share nothing) would each find the messages not yet copied and copy them. So, as a send does in
Sent, each attempt first files a small claim message in the destination mailbox (`stake`),
whose Message-ID is derived from the approved target, and learns its UID (APPENDUID, RFC 4315).
Only the attempt whose claim has the lowest UID among the live claims runs the change
(`contend`; the others get `ChangeInProgress`); every attempt removes its own claim when it
ends (`release`). Since the change itself finds what is already done (a copy skips what the
destination holds, moved messages are gone from the source), attempts that run one after the
other change nothing twice.

An attempt that died (connection cut, process stopped) leaves its claim behind. A claim is live
for `lifetime` seconds after its INTERNALDATE, compared with the INTERNALDATE of the contending
attempt's own claim: both are the server's clock, so replicas' clocks do not matter. The change
runs as one pool operation, stopped at IMAP_TIMEOUT (`imap.deadline`), so `lifetime` is twice
that: a claim older cannot belong to a running attempt. A stale claim is ignored and removed by
the next change into that mailbox; the next attempt of the same change also learns where the
dead attempt stood: whatever the destination holds above the stale claim's UID was put there by
it (`Standing.floor`), so a move interrupted after its COPY is completed instead of copied again.

Without UIDPLUS there is no APPENDUID and no claim: concurrent copies are then not excluded
(a move then needs MOVE, which is atomic on the server).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from email.utils import format_datetime

from imapclient import IMAPClient

from imap_mcp.sealing import Target, fingerprint
from imap_mcp.server.errors import MailboxError
from imap_mcp.server.imap.connection import append

SEEN = b"\\Seen"
DELETED = b"\\Deleted"
#: the keyword of a claim message (for people and other clients; nothing relies on it)
CLAIM = b"$ImapMcpClaim"
#: what the Message-ID of every claim ends with, before its closing `>`
CLAIM_DOMAIN = "@imap-mcp.invalid"
#: a claim is live for this many times IMAP_TIMEOUT
LIFETIME_PER_TIMEOUT = 2
_APPENDUID = re.compile(rb"\[APPENDUID (\d+) (\d+)\]")


class ChangeInProgress(MailboxError):
    """Another attempt of the same approved change holds the claim and is running it now (the tool catches it
    and answers `in_progress`: nothing failed)."""


@dataclass(frozen=True)
class DestinationClaim:
    mailbox: str
    uid: int
    message_id: str


@dataclass(frozen=True)
class Standing:
    """What a winning attempt learnt: the lowest UID of a stale claim, if a dead attempt left one."""

    floor: int | None


def claim_message_id(target: Target) -> str:
    """The Message-ID every attempt of this approved change gives its claim."""
    return f"<claim.{fingerprint(target)[:40]}{CLAIM_DOMAIN}>"


def lifetime(timeout: float) -> float:
    return LIFETIME_PER_TIMEOUT * timeout


def stake(client: IMAPClient, destination: str, message_id: str) -> DestinationClaim | None:
    """File this attempt's claim (`claim_message_id`) in `destination`; None (nothing filed) without UIDPLUS."""
    if not client.has_capability("UIDPLUS"):
        return None
    response = append(client, destination, _claim_message(message_id), (SEEN, CLAIM))
    found = _APPENDUID.search(response if isinstance(response, bytes) else b"")
    if found is None:
        return None  # filed, but without its UID it is only a stale claim for the next attempt to remove
    return DestinationClaim(destination, int(found.group(2)), message_id)


def _claim_message(message_id: str) -> bytes:
    now = format_datetime(dt.datetime.now(dt.UTC))
    return (
        "From: imap-mcp <imap-mcp@imap-mcp.invalid>\r\n"
        "Subject: imap-mcp: messages are being moved or copied here\r\n"
        f"Date: {now}\r\nMessage-ID: {message_id}\r\nMIME-Version: 1.0\r\n"
        "Content-Type: text/plain; charset=us-ascii\r\n\r\n"
        "imap-mcp marks an approved move or copy into this mailbox while it runs, so that it runs once.\r\n"
        "It removes this message when the change ends; one left behind by an interrupted change can be deleted.\r\n"
    ).encode("ascii")


def contend(client: IMAPClient, claim: DestinationClaim, lifetime_seconds: float) -> Standing:
    """Remove stale claims (of any change, so none is left for long); `ChangeInProgress` unless this attempt's
    claim is the earliest live one of its change."""
    client.select_folder(claim.mailbox)
    ours = set(client.search(["HEADER", "Message-ID", claim.message_id]))
    claims = ours | set(client.search(["HEADER", "Message-ID", CLAIM_DOMAIN]))
    fetched = client.fetch(claims, ["INTERNALDATE"]).items()
    # unsolicited FETCH responses (another session changing flags) come back too: only answers count
    dates = {uid: data[b"INTERNALDATE"] for uid, data in fetched if b"INTERNALDATE" in data}
    own = dates.get(claim.uid)
    if own is None:
        raise ChangeInProgress("this attempt's claim disappeared (another mail client removed it?)")
    oldest_live = own - dt.timedelta(seconds=lifetime_seconds)
    stale = sorted(uid for uid, date in dates.items() if date < oldest_live)
    if stale:
        expunge_exactly(client, stale)
    if min(uid for uid in ours if uid in dates and uid not in stale) != claim.uid:
        raise ChangeInProgress("another attempt of this approved change is running it now")
    dead = [uid for uid in stale if uid in ours]
    return Standing(floor=dead[0] if dead else None)


def release(client: IMAPClient, claim: DestinationClaim) -> None:
    """Remove exactly this attempt's claim."""
    client.select_folder(claim.mailbox)
    expunge_exactly(client, [claim.uid])


def expunge_exactly(client: IMAPClient, uids: list[int] | str) -> None:
    """`\\Deleted` + `UID EXPUNGE` of exactly `uids` in the selected mailbox (never a plain EXPUNGE)."""
    client.add_flags(uids, [DELETED], silent=True)
    client.uid_expunge(uids)
