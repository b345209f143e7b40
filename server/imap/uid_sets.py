"""UID sets on the wire: compressed into ranges, and parsed back (COPYUID / APPENDUID).

imapclient sends a list of UIDs verbatim (`1,2,3,...`), and Dovecot refuses a command line
over 64 KB, so a few thousand UIDs already fail. Every UID set this server sends goes through
`compress` first, which turns `[1, 2, 3, 5]` into `1:3,5`.

No UIDs at all (an empty SEARCH answer, a mailbox that emptied meanwhile) is `NO_UIDS`, the empty string:
IMAP has no way to write an empty set, so a set that names nothing is never sent. `fetch.split_uid_set`
cuts it into no pieces (every UID FETCH goes through it: nothing is asked, nothing found), and `expand` and
`size` read it as no UIDs. A helper lookup that finds nothing thus finds nothing, instead of failing its tool.
"""

from __future__ import annotations

from collections.abc import Iterable

#: the set of no UIDs: never sent (see the module)
NO_UIDS = ""


def compress(uids: Iterable[int]) -> str:
    """The IMAP sequence-set for `uids`: sorted, de-duplicated, consecutive runs as `a:b`; `NO_UIDS` for none."""
    ordered = sorted(set(uids))
    if not ordered:
        return NO_UIDS
    runs: list[str] = []
    start = previous = ordered[0]
    for uid in ordered[1:]:
        if uid != previous + 1:
            runs.append(_run(start, previous))
            start = uid
        previous = uid
    runs.append(_run(start, previous))
    return ",".join(runs)


def _run(start: int, end: int) -> str:
    return str(start) if start == end else f"{start}:{end}"


def expand(sequence_set: str) -> list[int]:
    """The UIDs of a sequence set such as `4:6,9` (in the order given; `6:4` counts down)."""
    uids: list[int] = []
    for part in filter(None, sequence_set.split(",")):
        first, _, last = part.partition(":")
        low, high = int(first), int(last or first)
        step = 1 if high >= low else -1
        uids.extend(range(low, high + step, step))
    return uids


def size(sequence_set: str) -> int:
    """How many UIDs `sequence_set` names, counted without listing them (a server may name billions)."""
    total = 0
    for part in filter(None, sequence_set.split(",")):
        first, _, last = part.partition(":")
        total += abs(int(last or first) - int(first)) + 1
    return total
