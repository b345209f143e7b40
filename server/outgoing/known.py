"""What the server knows of a message about to be sent, for the person asked to approve it.

- Each recipient, `known` when a message in the Sent mailbox was addressed to it (To, Cc or Bcc), else `new`; a
  bounded lookup: at most `CHECKED_MAX` recipients, one SEARCH each, then one FETCH of the address headers of at
  most `VERIFIED_MAX` newest matches each (IMAP SEARCH matches substrings, so `ob@example.com` would match
  `bob@example.com`: an address counts as known only when a header names it exactly). Past the bound, without a
  Sent mailbox, or when the lookup fails, a recipient is `not checked`: never reported as known.
- Whether an identical message (the same target: sender, recipients, subject, body, attachments) went out in the
  last `IDENTICAL_WITHIN` seconds, from the approval ledger, and how it was approved.

Neither is bound by the approval (the target is): both are read when the question is shown, and the second
confirmation the operator's policy may ask for (`policy.SendPolicy.confirm_new`) on every round.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.utils import getaddresses
from typing import Literal

from imap_mcp.protocol.local_time import DialogClock
from imap_mcp.protocol.texts import shown, word

from ..errors import ImapMcpError
from ..imap.fetch import fetch
from ..imap.mailboxes import mailbox_with_role
from ..imap.pool import ImapPool
from ..imap.session import Session
from ..reading.search import SearchQuery, matching_uids, search_string
from .policy import SendPolicy
from .send_once import Sender

#: the most recipients looked up in Sent for one question
CHECKED_MAX = 20
#: the newest matches per recipient whose address headers are read to confirm the exact address
VERIFIED_MAX = 5
#: how far back the ledger is asked for an identical message (seconds)
IDENTICAL_WITHIN = 3600
_HEADERS = "BODY.PEEK[HEADER.FIELDS (TO CC BCC)]"
Seen = Literal["known", "new", "not checked"]


@dataclass(frozen=True)
class RecipientsSeen:
    """Each recipient (addr-spec, lower case) as the Sent mailbox `sent` knows it; `reason` why none was checked."""

    status: dict[str, Seen]
    sent: str | None = None
    reason: str | None = None


def look_up(client: Session, recipients: Sequence[str]) -> RecipientsSeen:
    """Which of `recipients` a message in the Sent mailbox was addressed to (see the module's doc for the bound)."""
    sent = mailbox_with_role(client, "sent")
    if sent is None:
        return RecipientsSeen(dict.fromkeys(recipients, "not checked"), reason="this account has no Sent mailbox")
    client.select_folder(sent, readonly=True)
    checked = list(recipients[:CHECKED_MAX])
    candidates: dict[str, list[int]] = {}
    for address in checked:
        quoted = search_string(address)
        keys = (b"OR", b"TO", quoted, b"OR", b"CC", quoted, b"BCC", quoted)
        candidates[address] = sorted(matching_uids(client, SearchQuery(extra_keys=keys)))[-VERIFIED_MAX:]
    wanted = sorted({uid for uids in candidates.values() for uid in uids})
    headers = fetch(client, wanted, [_HEADERS]) if wanted else {}
    named = {uid: _addresses(data) for uid, data in headers.items()}
    status: dict[str, Seen] = dict.fromkeys(recipients, "not checked")
    for address, uids in candidates.items():
        status[address] = "known" if any(address in named.get(uid, ()) for uid in uids) else "new"
    return RecipientsSeen(status, sent)


def _addresses(data: dict[bytes, object]) -> frozenset[str]:
    raw = next((value for key, value in data.items() if key.startswith(b"BODY[HEADER.FIELDS")), b"")
    text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else ""
    fields = [line.partition(":")[2] for line in text.replace("\r\n ", " ").replace("\r\n\t", " ").splitlines()]
    return frozenset(address.lower() for _, address in getaddresses(fields) if address)


def recipient_lines(seen: RecipientsSeen, recipients: Sequence[str]) -> list[str]:
    """The question's lines: every recipient, marked new where no message in Sent was ever addressed to it."""
    if seen.reason is not None:
        return [f"Recipients never written to before: not checked ({seen.reason})."]
    lines = [f"Each recipient, as the Sent mailbox {shown(seen.sent or '')} knows it:"]
    for address in recipients:
        status = seen.status.get(address, "not checked")
        if status == "new":
            lines.append(f"- {word(address)}: new (no message in Sent was ever addressed to it)")
        elif status == "known":
            lines.append(f"- {word(address)}: written to before")
        else:
            lines.append(f"- {word(address)}: not checked (only the first {CHECKED_MAX} recipients are looked up)")
    return lines


@dataclass
class SendQuestion:
    """What a send's question shows beyond the message itself, read at most once per call."""

    pool: ImapPool
    sender: Sender
    policy: SendPolicy
    clock: DialogClock
    recipients: tuple[str, ...]
    target: str
    _seen: RecipientsSeen | None = field(default=None, init=False)

    async def seen(self) -> RecipientsSeen:
        if self._seen is None:
            recipients = self.recipients
            try:
                self._seen = await self.pool.run(lambda client: look_up(client, recipients))
            except ImapMcpError as exc:
                reason = f"the lookup failed: {exc}"
                self._seen = RecipientsSeen(dict.fromkeys(recipients, "not checked"), reason=reason)
        return self._seen

    async def details(self) -> tuple[str, ...]:
        """The recipients as Sent knows them, and an identical message sent in the last hour, if one was."""
        lines = recipient_lines(await self.seen(), self.recipients)
        earlier = await self.sender.identical_sent(self.target, IDENTICAL_WITHIN)
        if earlier is not None:
            at = dt.datetime.fromtimestamp(earlier.since, self.clock.now().tzinfo)
            how = "a yes" if earlier.outcome.get("approved_by") in ("dialog", "push") else "a confirm_token"
            lines.append(
                f"An identical message to the same recipients was sent at {at:%H:%M} ({self.clock.label()}) "
                f"after {how}: approving sends another copy."
            )
        return tuple(lines)

    async def second(self) -> str | None:
        """With IMAP_MCP_SEND_CONFIRM_NEW: the recipients not known to Sent (new or not checked), to confirm again."""
        if not self.policy.confirm_new:
            return None
        return second_confirmation(await self.seen(), self.recipients)


def second_confirmation(seen: RecipientsSeen, recipients: Sequence[str]) -> str | None:
    """What the second confirmation is about: the recipients Sent does not know (new, or not checked); None if none."""
    unknown = [address for address in recipients if seen.status.get(address) != "known"]
    if not unknown:
        return None
    return (
        f"it goes to {len(unknown)} recipient{'s' if len(unknown) != 1 else ''} never written to before (or not "
        f"checked): {', '.join(word(a) for a in unknown)}."
    )
