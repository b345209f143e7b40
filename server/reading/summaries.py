"""Message summaries as search pages list them, and a bounded cache of the part that never changes.

A summary holds what is fixed once a message exists under its UID in a UIDVALIDITY (id, date
received, size, sender, recipients, subject, whether it has attachments, what its headers say about
the sender) and its flags, which change. Whether the sender is verified and the warnings that depend
on what the account knows (`judged`) are worked out for each answer from the fixed part.
`SummaryCache` keeps the fixed part of the messages shown lately, so a page shown again (the usual
case: page 1 of the INBOX, asked for again and again) costs one `UID FETCH <page> (FLAGS)` instead of
every message's ENVELOPE, BODYSTRUCTURE and Authentication-Results and reading them. Flags are always
fetched from the server: the cache never answers for anything that can change.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from ..imap.fetch import UNREADABLE, FetchData, fetch
from ..imap.message_ids import MessageRef
from ..imap.pool import Examined
from ..imap.session import Session
from .addresses import envelope_address, formatted
from .authentication import AUTHENTICATION_FIELD, results_headers
from .fence import SenderLine, imitates_fence
from .invisible import without_invisible
from .lookalikes import lookalike_reasons
from .parts import attachments, decode_words, parse_structure
from .warnings import (
    Judge,
    MailWarning,
    SenderFacts,
    WarningCode,
    display_name_warning,
    instruction_findings,
    reply_to_warning,
)

#: the bytes of a summary's Authentication-Results headers read (the trusted ones are at the top)
SUMMARY_AUTHENTICATION_BYTES = 8192
SUMMARY_ITEMS = (
    "FLAGS",
    "INTERNALDATE",
    "RFC822.SIZE",
    "ENVELOPE",
    "BODYSTRUCTURE",
    f"BODY.PEEK[HEADER.FIELDS ({AUTHENTICATION_FIELD})]<0.{SUMMARY_AUTHENTICATION_BYTES}>",
)
#: what is fetched again for a message whose summary could not be read: short whatever the message
BASIC_ITEMS = ("FLAGS", "INTERNALDATE", "RFC822.SIZE")
NOT_PARSED = "its headers or MIME structure could not be parsed"
#: fixed parts kept per account: about 830 bytes each with ordinary headers (3.4 MB in all)
MAX_CACHED_SUMMARIES = 4096


class MessageSummary(BaseModel):
    id: str = Field(description="The message id: pass it to get_message, get_attachments and other tools.")
    uid: int = Field(description="The IMAP UID (deprecated way to name the message, with mailbox).")
    mailbox: str
    date: str | None = Field(description="When the server received it (IMAP INTERNALDATE), ISO 8601.")
    sender: SenderLine = Field(alias="from", description="The From header, decoded; written by the sender.")
    to: list[SenderLine] = Field(description="The To addresses, decoded; written by the sender.")
    subject: SenderLine = Field(description="The subject, decoded; written by the sender.")
    flags: list[str] = Field(description="IMAP flags and keywords, e.g. \\Seen, \\Flagged, $Forwarded.")
    unread: bool
    flagged: bool
    is_draft: bool = Field(
        default=False, description="Carries the \\Draft flag: a draft (one in Drafts can be sent with send_draft)."
    )
    size: int = Field(description="Size of the whole message in bytes.")
    has_attachments: bool
    unreadable: str | None = Field(
        default=None,
        description=(
            "Set when the message could not be summarised (broken or hostile mail): why. Its id, flags, date and "
            "size are still given; sender, to and subject are then empty."
        ),
    )
    sender_verified: bool | None = Field(
        default=None,
        description="true: the trusted receiving server (IMAP_TRUSTED_AUTHSERV_ID) vouches for the From's "
        "organisational domain (a DMARC pass naming it, or DKIM or SPF aligned with it); false: it judged and nothing "
        "vouches (also when the From shows addresses, display names included, of several organisations); null: no "
        "trusted verdict (get_message gives the details).",
    )
    #: plain strings, not an enum: a client checks every summary of a page against the schema, and an enum per
    #: item costs each check more (the codes are get_message's `warnings[].code`)
    warnings: list[str] = Field(
        default_factory=list,
        description="Codes of the warnings the headers give, as get_message's warnings[].code "
        "(display_name_has_address, reply_to_elsewhere, lookalike_domain, hidden_text, instructions_to_assistant, "
        "fence_imitation); get_message gives each with its reason.",
    )
    _facts: SenderFacts = PrivateAttr(default_factory=SenderFacts)
    _codes: tuple[WarningCode, ...] = PrivateAttr(default=())

    model_config = {"populate_by_name": True}


@dataclass(frozen=True, slots=True)
class Fixed:
    """What a summary says that never changes for a message (a UID in a UIDVALIDITY)."""

    id: str
    received: dt.datetime | None
    size: int
    sender: str = ""
    to: tuple[str, ...] = ()
    subject: str = ""
    has_attachments: bool = False
    #: why the message could not be summarised (sender, to and subject are then empty)
    unreadable: str | None = None
    facts: SenderFacts = field(default_factory=SenderFacts)
    #: the warnings the headers give whatever the account knows
    codes: tuple[WarningCode, ...] = ()

    @property
    def seconds(self) -> float:
        return seconds(self.received)


def seconds(received: object) -> float:
    """INTERNALDATE as a timestamp for ordering (the epoch when the server gave none)."""
    return received.timestamp() if isinstance(received, dt.datetime) else 0.0


def addresses(found: Sequence[Any] | None) -> list[str]:
    """ENVELOPE addresses as RFC 5322 writes them (`Name <mailbox@host>`, the name quoted where it must be),
    decoded; group markers left out."""
    return [formatted(*envelope_address(a)) for a in found or () if a.mailbox or a.host]


def _facts(envelope: Any, data: FetchData) -> SenderFacts:
    """What the ENVELOPE and the Authentication-Results headers say about the sender."""
    senders = [envelope_address(a) for a in envelope.from_ or () if a.mailbox or a.host] if envelope else []
    name, address = senders[0] if senders else ("", "")
    reply_to = [envelope_address(a)[1] for a in (envelope.reply_to or ()) if a.host] if envelope else []
    verdicts = next((v for k, v in data.items() if AUTHENTICATION_FIELD.encode() in k.upper()), None)
    return SenderFacts(name, address, tuple(reply_to), tuple(results_headers(verdicts or b"")), tuple(senders[1:]))


def _codes(facts: SenderFacts, sender: str, subject: str) -> tuple[WarningCode, ...]:
    """The codes of the warnings the headers give whatever the account knows."""
    found: list[MailWarning | None] = [display_name_warning(facts), reply_to_warning(facts)]
    codes = [w.code for w in found if w is not None]
    if without_invisible(sender)[1] or without_invisible(subject)[1]:
        codes.append("hidden_text")
    if imitates_fence(sender) or imitates_fence(subject):
        codes.append("fence_imitation")
    return tuple(dict.fromkeys(codes))


def fixed_part(examined: Examined, uid: int, data: FetchData) -> Fixed:
    """The fixed part from `data`: SUMMARY_ITEMS, or for a message whose summary could not be read its
    BASIC_ITEMS with the reason under UNREADABLE. Never raises: hostile mail is listed as unreadable."""
    received = data.get(b"INTERNALDATE")
    size = data.get(b"RFC822.SIZE")
    basics = Fixed(
        id=MessageRef(examined.mailbox, examined.uidvalidity, uid).id,
        received=received if isinstance(received, dt.datetime) else None,
        size=size if isinstance(size, int) else 0,
    )
    reason = data.get(UNREADABLE)
    if reason is not None:
        return _unreadable(basics, str(reason))
    envelope = data.get(b"ENVELOPE")
    structure = data.get(b"BODYSTRUCTURE")
    try:  # hostile mail may break any parser in a way nobody listed: it must not hide the page
        sender = ", ".join(addresses(envelope.from_)) if envelope else ""
        subject = decode_words(envelope.subject) if envelope else ""
        facts = _facts(envelope, data)
        return Fixed(
            id=basics.id,
            received=basics.received,
            size=basics.size,
            sender=sender,
            to=tuple(addresses(envelope.to)) if envelope else (),
            subject=subject,
            has_attachments=bool(structure and attachments(parse_structure(structure))),
            facts=facts,
            codes=_codes(facts, sender, subject),
        )
    except Exception:
        return _unreadable(basics, NOT_PARSED)


def _unreadable(basics: Fixed, reason: str) -> Fixed:
    return Fixed(id=basics.id, received=basics.received, size=basics.size, unreadable=reason)


def summary(examined: Examined, uid: int, fixed: Fixed, raw_flags: Iterable[Any]) -> MessageSummary:
    flags = [f.decode("utf-8", "replace") if isinstance(f, bytes) else str(f) for f in raw_flags]
    lowered = {f.lower() for f in flags}
    made = MessageSummary(
        id=fixed.id,
        uid=uid,
        mailbox=examined.mailbox,
        date=fixed.received.isoformat() if fixed.received else None,
        sender=fixed.sender,
        to=list(fixed.to),
        subject=fixed.subject,
        flags=flags,
        unread="\\seen" not in lowered,
        flagged="\\flagged" in lowered,
        is_draft="\\draft" in lowered,
        size=fixed.size,
        has_attachments=fixed.has_attachments,
        unreadable=fixed.unreadable,
        warnings=list(fixed.codes),
    )
    made._facts, made._codes = fixed.facts, fixed.codes
    return made


def judged(summaries: Sequence[MessageSummary], judge: Judge) -> None:
    """Set each summary's `sender_verified` and the warning codes that depend on what the account knows."""
    for found in summaries:
        if found.unreadable is not None:
            continue
        found.sender_verified = found._facts.verified(judge)
        judging: list[WarningCode] = []
        domain = found._facts.domain
        if domain and lookalike_reasons(domain, judge.known):
            judging.append("lookalike_domain")
        if _addresses_an_assistant(found.subject, found.sender, judge.tool_names):
            judging.append("instructions_to_assistant")
        found.warnings = list(dict.fromkeys([*found._codes, *judging]))


@lru_cache(maxsize=MAX_CACHED_SUMMARIES)
def _addresses_an_assistant(subject: str, sender: str, tool_names: frozenset[str]) -> bool:
    """Whether a summary's subject or From holds text addressed to an AI assistant (remembered: pages repeat)."""
    return bool(instruction_findings(subject, tool_names) or instruction_findings(sender, tool_names))


class SummaryCache:
    """The fixed parts of the `max_entries` messages summarised last (least recently used go first).

    Keyed by mailbox, UIDVALIDITY and UID, which name one message forever: a UID is never reused
    within a UIDVALIDITY, so an entry is never wrong, only possibly unused. Shared by the pool's
    threads, hence the lock.
    """

    def __init__(self, max_entries: int = MAX_CACHED_SUMMARIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, int, int], Fixed] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def known(self, examined: Examined, uids: Iterable[int]) -> dict[int, Fixed]:
        found: dict[int, Fixed] = {}
        with self._lock:
            for uid in uids:
                key = (examined.mailbox, examined.uidvalidity, uid)
                if (fixed := self._entries.get(key)) is not None:
                    self._entries.move_to_end(key)
                    found[uid] = fixed
        return found

    def keep(self, examined: Examined, parts: dict[int, Fixed]) -> None:
        with self._lock:
            for uid, fixed in parts.items():
                self._entries[(examined.mailbox, examined.uidvalidity, uid)] = fixed
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)


@dataclass
class Described:
    """The fixed parts of some messages of the selected mailbox, and the flags fetched with them.

    A UID with no fixed part is no longer in the mailbox (expunged since it was listed).
    """

    examined: Examined
    fixed: dict[int, Fixed]
    flags: dict[int, Any] = field(default_factory=dict)

    def summaries(self, client: Session, page: Sequence[int], cache: SummaryCache | None) -> list[MessageSummary]:
        """The summaries of `page`, in its order, with current flags (fetched for those taken from the cache).

        Those of `page` not described yet (a run of equal dates may bring them in) are described first.
        """
        if undescribed := [uid for uid in page if uid not in self.fixed]:
            more = describe(client, self.examined, undescribed, cache)
            self.fixed |= more.fixed
            self.flags |= more.flags
        stale = [uid for uid in page if uid in self.fixed and uid not in self.flags]
        if stale:
            self.flags.update((uid, data.get(b"FLAGS", ())) for uid, data in fetch(client, stale, ["FLAGS"]).items())
        return [
            summary(self.examined, uid, self.fixed[uid], self.flags[uid])
            for uid in page
            if uid in self.fixed and uid in self.flags
        ]


def describe(client: Session, examined: Examined, uids: Sequence[int], cache: SummaryCache | None) -> Described:
    """The fixed parts of `uids`: from `cache` where it has them, else fetched (and then kept in it).

    Fetched messages come with their flags. One whose summary items could not be read gets its
    BASIC_ITEMS fetched again (short whatever the message) and is described as unreadable.
    """
    fixed = cache.known(examined, uids) if cache is not None else {}
    missing = [uid for uid in uids if uid not in fixed]
    if not missing:
        return Described(examined, fixed)
    fetched = fetch(client, missing, SUMMARY_ITEMS)
    unreadable = {uid: data[UNREADABLE] for uid, data in fetched.items() if UNREADABLE in data}
    basics = fetch(client, list(unreadable), BASIC_ITEMS) if unreadable else {}
    for uid, reason in unreadable.items():
        if uid in basics:
            fetched[uid] = {**basics[uid], UNREADABLE: reason}
        else:
            del fetched[uid]  # gone between the two fetches
    new = {uid: fixed_part(examined, uid, data) for uid, data in fetched.items() if _described(data)}
    if cache is not None:
        cache.keep(examined, new)
    flags = {uid: fetched[uid].get(b"FLAGS", ()) for uid in new}
    return Described(examined, fixed | new, flags)


def _described(data: FetchData) -> bool:
    """Whether `data` holds a message's summary items, or says why they could not be read."""
    return b"ENVELOPE" in data or UNREADABLE in data
