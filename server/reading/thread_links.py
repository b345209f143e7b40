"""What joins messages into a conversation: the Message-IDs their headers name, and nothing else.

A message names its own Message-ID and those of the messages it answers (In-Reply-To) and of the
conversation before it (References). Two messages are in the same conversation when a chain of
shared ids joins them: a reply and its original (the reply names the original's id), two replies
to the same message even when that message is nowhere to be found (both name its id), the copy of
a message in another mailbox (the same Message-ID). The subject never joins anything: RFC 5256's
THREAD=REFERENCES groups threads whose subjects match in its last step, so what a server's THREAD
answers is only a set of candidates, each kept only when these links join it (`conversation`).

Headers are written by strangers, so what is read of them is bounded: at most `LINK_BYTES` of the
three headers of a message, of its In-Reply-To the first `MAX_IN_REPLY_TO` ids and of its
References the first (the conversation's root) and the last `MAX_REFERENCES` (the messages just
before it), each id at most `MAX_ID_LENGTH` characters of printable ASCII (an id that is not could
not be searched for: see `imap.by_message_id`). The same bounded view is used wherever a message is
met, so a conversation is the same from whichever of its messages it is built.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from email.policy import compat32

from ..imap.message_ids import MessageRef

LINK_FIELDS = ("MESSAGE-ID", "IN-REPLY-TO", "REFERENCES")
#: the most bytes of a message's three link headers read: a References of 10,000 ids is read in part
LINK_BYTES = 16 * 1024
#: the FETCH item of a message's link headers (never marks it read)
LINK_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(LINK_FIELDS)})]<0.{LINK_BYTES}>"
#: of References, the first id and this many last ones are kept
MAX_REFERENCES = 20
MAX_IN_REPLY_TO = 3
MAX_ID_LENGTH = 250

_ID = re.compile(rf"<[^<>\s]{{1,{MAX_ID_LENGTH}}}>")


@dataclass(frozen=True)
class Links:
    """A message and the Message-IDs its headers give: its own, and those it names (bounded)."""

    ref: MessageRef
    own: str | None
    named: tuple[str, ...] = ()

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(self.named) | ({self.own} if self.own else frozenset())


def _ids(value: str | None) -> list[str]:
    """The `<…>` ids in a header's value that can be searched for, in order, without repeats."""
    found = _ID.findall(value or "")
    return list(dict.fromkeys(i for i in found if i.isascii() and i.isprintable()))


def links_of(ref: MessageRef, header_block: bytes) -> Links:
    """The links of the message `ref` from a fetched block of its link headers (`LINK_ITEM`; cut or not)."""
    headers = BytesHeaderParser(policy=compat32).parsebytes(header_block)
    own = _ids(_text(headers.get_all("Message-ID")))[:1]
    replied = _ids(_text(headers.get_all("In-Reply-To")))[:MAX_IN_REPLY_TO]
    references = _ids(_text(headers.get_all("References")))
    if len(references) > MAX_REFERENCES + 1:
        references = [references[0], *references[-MAX_REFERENCES:]]
    named = tuple(i for i in dict.fromkeys([*replied, *references]) if i not in own)
    return Links(ref, own[0] if own else None, named)


def _text(values: Sequence[object] | None) -> str:
    """Every value of a header (a message may repeat one), unfolded, as one string."""
    return " ".join(str(v) for v in values or ())


def conversation(links: Mapping[MessageRef, Links], start: MessageRef) -> list[Links]:
    """The messages of `links` that a chain of shared ids joins to `start` (itself included), in no order."""
    holders: dict[str, list[MessageRef]] = {}
    for ref, link in links.items():
        for message_id in link.ids:
            holders.setdefault(message_id, []).append(ref)
    joined, waiting, followed = {start}, [start], set[str]()
    while waiting:
        for message_id in links[waiting.pop()].ids - followed:
            followed.add(message_id)
            for other in holders[message_id]:
                if other not in joined:
                    joined.add(other)
                    waiting.append(other)
    return [links[ref] for ref in joined]


def ids_of(members: Iterable[Links]) -> set[str]:
    """Every id the `members` give: what a message of their conversation elsewhere would name."""
    found: set[str] = set()
    for member in members:
        found |= member.ids
    return found
