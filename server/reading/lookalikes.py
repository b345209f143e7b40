"""Sender domains that pass for another: mixed scripts, punycode, and confusables of the domains the account knows.

A From domain is a look-alike (`lookalike_reasons`) when

- a label mixes scripts (`paypal` with its first `a` Cyrillic), beyond the mixtures a language
  writes (Han with Hiragana/Katakana, Hangul or Bopomofo, and Latin with those), script data from
  `confusable-homoglyphs` (Unicode's Scripts.txt);
- it is internationalised: a punycode label (`xn--…`) or non-ASCII text, shown as punycode;
- it is confusable with a domain the account knows but is not that domain: its own (the login and
  the From address) or one it has written to (`SentDomains`: the recipients of the newest messages in
  Sent). Confusable means equal skeletons (UTS #39: each character replaced by the prototype of its
  confusables class, from Unicode's confusables.txt as `confusable-homoglyphs` ships it), compared
  case-folded for the whole domain and for its registrable part (the Public Suffix List as
  `publicsuffixlist` ships it): `paypa1.com`, `rnicrosoft.com` and `secure.paypal.com` with a Cyrillic `a` all imitate
  `paypal.com` / `microsoft.com`.

Details name domains in ASCII (punycode) only: a detail is this server's text, outside the fence.
"""

from __future__ import annotations

import imaplib
import json
import threading
import time
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.resources import files

from confusable_homoglyphs.categories import unique_aliases
from imapclient.exceptions import IMAPClientError
from publicsuffixlist import PublicSuffixList

from ..imap.fetch import fetch
from ..imap.mailboxes import mailbox_with_role
from ..imap.session import Session

#: scripts any text mixes in (digits, punctuation, combining marks)
_NEUTRAL_SCRIPTS = frozenset({"COMMON", "INHERITED"})
#: mixtures of scripts a language writes (UTS #39 "highly restrictive"); anything else mixed is a look-alike
_WRITTEN_TOGETHER = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
)
#: a DNS label is at most 63 octets: longer text is no label (and punycode's decoder is quadratic)
MAX_LABEL = 63
MAX_DOMAIN = 253


@cache
def _prototypes() -> dict[int, str]:
    """Each confusable character's class prototype, for `str.translate`.

    `confusable-homoglyphs` lists, for each character, what it is confusable with in both directions
    (a source names its prototype, a prototype its sources), with bidi marks around right-to-left
    characters. Its classes are the connected parts of that relation; in each, one member (the
    prototype) is confusable with every other, and is the one written with several characters when
    there is such a member (`m` → `rn`). Only the classes matter for comparing skeletons.
    """
    listed = json.loads(files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8"))
    neighbours: defaultdict[str, set[str]] = defaultdict(set)
    for key, entries in listed.items():
        source = key.replace("\u200e", "")
        for entry in entries:
            other = entry["c"].replace("\u200e", "")
            if other != source:
                neighbours[source].add(other)
                neighbours[other].add(source)
    table: dict[int, str] = {}
    seen: set[str] = set()
    for start in neighbours:
        if start in seen:
            continue
        members, pending = set(), [start]
        while pending:
            member = pending.pop()
            if member not in members:
                members.add(member)
                pending.extend(neighbours[member])
        seen |= members
        prototype = _prototype(members, neighbours)
        table.update((ord(member), prototype) for member in members if len(member) == 1 and member != prototype)
    return table


def _prototype(members: set[str], neighbours: dict[str, set[str]]) -> str:
    longer = [member for member in members if len(member) > 1]
    if longer:
        return min(longer)
    return min(member for member in members if neighbours[member] >= members - {member})


def skeleton(text: str) -> str:
    """UTS #39's skeleton of `text`, case-folded: equal skeletons look alike."""
    previous, current = None, text
    for _ in range(3):  # folding after mapping can meet another mapping (0 → O → o); settles in one or two rounds
        if current == previous:
            break
        previous = current
        current = unicodedata.normalize(
            "NFD", unicodedata.normalize("NFD", current.casefold()).translate(_prototypes())
        ).casefold()
    return current


@cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()


def unicode_domain(domain: str) -> str:
    """`domain` lower-cased with every punycode label decoded (one that cannot be decoded stays as is)."""
    labels = domain.lower().rstrip(".").split(".")
    return ".".join(_decoded_label(label) for label in labels)


def _decoded_label(label: str) -> str:
    if not label.startswith("xn--") or len(label) > MAX_LABEL or not label.isascii():
        return label
    try:
        return label[4:].encode("ascii").decode("punycode")
    except UnicodeError:
        return label


def ascii_domain(domain: str) -> str:
    """`domain` in ASCII: every non-ASCII label as punycode (what a detail may show)."""
    return ".".join(_encoded_label(label) for label in domain.lower().rstrip(".").split("."))


def _encoded_label(label: str) -> str:
    if label.isascii():
        return label
    if len(label) > MAX_LABEL:
        return "(an overlong label)"
    return "xn--" + label.encode("punycode").decode("ascii")


def registrable(domain: str) -> str:
    """The registrable part of `domain` (`mail.example.co.uk` → `example.co.uk`); `domain` itself when it has none."""
    return _suffixes().privatesuffix(domain) or domain


def _mixed_scripts(label: str) -> bool:
    scripts = unique_aliases(label) - _NEUTRAL_SCRIPTS
    return len(scripts) > 1 and not any(scripts <= allowed for allowed in _WRITTEN_TOGETHER)


@dataclass(frozen=True)
class KnownDomains:
    """The domains an account knows (its own, those it wrote to), indexed by skeleton."""

    domains: frozenset[str] = frozenset()
    _by_skeleton: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, domains: Iterable[str]) -> KnownDomains:
        known = frozenset(unicode_domain(d) for d in domains if d and len(d) <= MAX_DOMAIN)
        index: dict[str, str] = {}
        for domain in sorted(known):
            index.setdefault(skeleton(domain), domain)
            index.setdefault(skeleton(registrable(domain)), registrable(domain))
        return cls(known, index)

    def imitated_by(self, domain: str) -> str | None:
        """The known domain `domain` (Unicode, lower case) looks like without being it, or None."""
        if domain in self.domains:
            return None
        own = registrable(domain)
        for candidate in (domain, own):
            found = self._by_skeleton.get(skeleton(candidate))
            if found is not None and found not in (candidate, own) and registrable(found) != own:
                return found
        return None


def lookalike_reasons(domain: str, known: KnownDomains) -> list[str]:
    """Why the From domain `domain` looks like another (empty when it does not); ASCII only."""
    if not domain or len(domain) > MAX_DOMAIN:
        return []
    return list(_lookalike_reasons(domain.lower().rstrip("."), known))


@lru_cache(maxsize=4096)
def _lookalike_reasons(domain: str, known: KnownDomains) -> tuple[str, ...]:
    readable = unicode_domain(domain)
    shown = ascii_domain(readable)
    reasons: list[str] = []
    if any(_mixed_scripts(label) for label in readable.split(".")):
        reasons.append(f"the From domain {shown} mixes scripts in one label")
    if not readable.isascii():
        reasons.append(f"the From domain {shown} is an internationalised name (punycode), which can imitate another")
    imitated = known.imitated_by(readable)
    if imitated is not None:
        reasons.append(
            f"the From domain {shown} looks like {ascii_domain(imitated)}, a domain this account uses or has written "
            "to, but is not it"
        )
    return tuple(reasons)


#: messages of Sent whose recipients are read, newest first, and the most domains kept of them
SENT_MESSAGES = 500
MAX_KNOWN_DOMAINS = 5000
#: how long a look at Sent (its STATUS, or finding there is none) stands before the next call looks again
SENT_RECHECK_SECONDS = 30.0


@dataclass(frozen=True)
class _SentState:
    mailbox: str
    uidvalidity: int
    uidnext: int
    messages: int


class SentDomains:
    """The domains an account knows: its own, and those of the recipients of its newest `SENT_MESSAGES` sent.

    Kept in process memory, one per account (the tools module makes it), at most `MAX_KNOWN_DOMAINS`.
    A reading call asks `is_current` within its own IMAP operation; at most every
    `SENT_RECHECK_SECONDS` that costs one STATUS of Sent (UIDVALIDITY, UIDNEXT, MESSAGES), compared with
    what the domains were read from (a LIST first when Sent's name is not known). When it differs the
    call runs `refresh` (a separate operation that EXAMINEs Sent and fetches ENVELOPEs) before it
    judges. In between, no IMAP command is sent for it: a round trip per call would cost every search a
    quarter more on a busy server. So a domain first written to (from any client) is known at most
    `SENT_RECHECK_SECONDS` later, and a Sent created meanwhile is found as late.
    """

    def __init__(self, own: Iterable[str] = ()) -> None:
        self.own = frozenset(d.lower() for d in own if d)
        self._lock = threading.Lock()
        self._read_from: _SentState | None = None
        self._known = KnownDomains.of(self.own)
        self._status: _SentState | None = None
        #: when a look last found the known domains current (monotonic seconds)
        self._current_at: float | None = None

    @property
    def known(self) -> KnownDomains:
        with self._lock:
            return self._known

    def _looked(self, read_from: _SentState | None, known: KnownDomains | None = None) -> None:
        with self._lock:
            self._current_at, self._read_from = time.monotonic(), read_from
            if known is not None:
                self._known = known

    def is_current(self, client: Session) -> bool:
        """Whether the known domains stand: looked at lately, or read from Sent as it is now (one STATUS)."""
        with self._lock:
            read_from, current_at = self._read_from, self._current_at
        if current_at is not None and time.monotonic() - current_at < SENT_RECHECK_SECONDS:
            return True
        name = read_from.mailbox if read_from is not None else mailbox_with_role(client, "sent")
        if name is None:
            self._looked(None, KnownDomains.of(self.own))
            return True
        status = _status(client, name)
        with self._lock:
            self._status = status
        if status is not None and status == read_from:
            self._looked(read_from)
            return True
        return False

    def refresh(self, client: Session) -> None:
        """Read the recipients' domains of Sent's newest messages (a plain pool operation: it EXAMINEs Sent)."""
        with self._lock:
            status = self._status
        name = status.mailbox if status is not None else mailbox_with_role(client, "sent")
        if name is None:
            self._looked(None, KnownDomains.of(self.own))
            return
        try:
            selected = client.select_folder(name, readonly=True)
        except imaplib.IMAP4.abort:
            raise  # the connection dropped: the pool's business
        except IMAPClientError:  # Sent cannot be opened: the account's own domains are all it knows
            self._looked(None, KnownDomains.of(self.own))
            return
        exists = int(selected.get(b"EXISTS", 0) or 0)
        domains = set(self.own)
        if exists:
            first = max(1, exists - SENT_MESSAGES + 1)
            domains |= _recipient_domains(client, first, exists)
        self._looked(_status(client, name), KnownDomains.of(sorted(domains)[:MAX_KNOWN_DOMAINS]))


def _status(client: Session, name: str) -> _SentState | None:
    try:
        found = client.folder_status(name, [b"UIDVALIDITY", b"UIDNEXT", b"MESSAGES"])
    except IMAPClientError:
        return None
    return _SentState(
        name, int(found.get(b"UIDVALIDITY", 0)), int(found.get(b"UIDNEXT", 0)), int(found.get(b"MESSAGES", 0))
    )


def _recipient_domains(client: Session, first: int, last: int) -> set[str]:
    """The domains of every To, Cc and Bcc address of messages `first`..`last` (message numbers) of the selected
    mailbox: a SEARCH by message numbers gives their UIDs, one FETCH their ENVELOPEs."""
    uids = client.search([f"{first}:{last}"])
    domains: set[str] = set()
    for data in fetch(client, uids, ["ENVELOPE"]).values():
        envelope = data.get(b"ENVELOPE")
        if envelope is None:
            continue
        for address in (*(envelope.to or ()), *(envelope.cc or ()), *(envelope.bcc or ())):
            host = address.host
            if host:
                domains.add((host.decode("utf-8", "replace") if isinstance(host, bytes) else str(host)).lower())
    return domains
