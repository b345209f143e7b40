"""Planning a message change for 50,000 ids of which 1,500 exist: the server's own work besides IMAP.

    .venv/bin/python bench/planning.py [--ids 50000] [--existing 1500] [--runs 3]

What `delete_messages` / `move_messages` / `set_message_flags` do with the ids on the event loop
and around the IMAP commands: group the ids by mailbox dropping duplicates (`resolve_selections`),
leave out the UIDs that do not exist (`left_out`, in planning, in the answer and in execution).
The IMAP commands themselves (one `UID SEARCH UID <ranges>`) are the same before and after and are
not measured here.

"before" is a faithful copy, kept only in this script, of the code these replaced (commit
c2a6f70: a list membership test per id while grouping, tuple membership tests while leaving out);
"after" calls the project's functions. Both run in the same rounds, interleaved, on the same ids,
and are checked to give the same result. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence

from imap_mcp.server.changes.messages import left_out
from imap_mcp.server.imap.lookup import resolve_selections
from imap_mcp.server.imap.message_ids import MessageRef, decode_id, encode_id

Result = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def before(ids: Sequence[str], existing: set[int]) -> Result:
    """The replaced code path, copied: grouping with `uid not in list`, leaving out with `uid not in tuple`."""
    groups: dict[tuple[str, int], list[int]] = {}
    for raw in ids:
        ref = decode_id(raw)
        uid_list = groups.setdefault((ref.mailbox, ref.uidvalidity), [])
        if ref.uid not in uid_list:
            uid_list.append(ref.uid)
    requested = tuple(next(iter(groups.values())))
    planned = tuple(sorted(existing & set(requested)))
    absent = tuple(uid for uid in requested if uid not in planned)
    present = tuple(sorted(existing & set(planned)))
    missing = tuple(uid for uid in planned if uid not in present)
    return planned, absent, missing


def after(ids: Sequence[str], existing: set[int]) -> Result:
    """The same steps through the project's functions."""
    requested = resolve_selections(ids, None, None)[0].uids
    found = existing & set(requested)
    planned = tuple(sorted(found))
    absent = left_out(requested, set(planned))
    still_there = existing & set(planned)
    return planned, absent, left_out(planned, still_there)


def timed(step: Callable[[], Result]) -> tuple[float, Result]:
    start = time.perf_counter()
    result = step()
    return (time.perf_counter() - start) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=50_000)
    parser.add_argument("--existing", type=int, default=1_500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(1)
    uids = list(range(1, args.ids + 1))
    rng.shuffle(uids)
    ids = [encode_id(MessageRef("INBOX", 7, uid)) for uid in uids]
    existing = set(rng.sample(uids, args.existing))
    rows: list[tuple[float, float]] = []
    for round_number in range(args.runs):
        sides = [("before", before), ("after", after)]
        if round_number % 2:
            sides.reverse()
        times: dict[str, float] = {}
        results: dict[str, Result] = {}
        for name, function in sides:
            times[name], results[name] = timed(lambda f=function: f(ids, existing))  # type: ignore[misc]
        if results["before"] != results["after"]:
            raise SystemExit("before and after disagree: the benchmark would compare different work")
        rows.append((times["before"], times["after"]))
    ratios = [b / a for b, a in rows]
    print(
        f"| planning {args.ids:,} ids, {args.existing:,} exist ({args.runs} interleaved rounds; median ms) "
        "| before (c2a6f70) | after | before / after, per round |"
    )
    print("|---|---|---|---|")
    print(
        f"| group ids, leave out missing UIDs (no IMAP) | {statistics.median(b for b, _ in rows):.0f} "
        f"| {statistics.median(a for _, a in rows):.0f} "
        f"| **{statistics.median(ratios):.0f}x ({min(ratios):.0f}-{max(ratios):.0f})** |"
    )


if __name__ == "__main__":
    main()
