"""search_messages across ten mailboxes (page 1, newest 20, one exact total), against raw imapclient in the same run.

    .venv/bin/python bench/search_across.py [--count 100000] [--runs 9]

Starts its own Dovecot (on /dev/shm when there is one), writes `--count` messages (`populate.py`, seed 1)
spread over ten mailboxes `Box0` … `Box9` (one tenth each, each its own generated year of mail), indexes
them and opens each read-write once (no `\\Recent` left). Then, in interleaved rounds (`run.rounds`: one
unmeasured warm-up per side, raw and imap-mcp swap which goes first each round):

- imap-mcp: `search_messages {"mailboxes": ["Box0", …, "Box9"]}` through `imap-mcp stdio` and the SDK client;
- raw imapclient, the same per-mailbox searches merged: one warm connection (sending and acknowledging at
  once, `imap.promptly`, as imap-mcp's do); for each mailbox `EXAMINE`, `UID SORT (REVERSE ARRIVAL) UTF-8 ALL`
  (the order and the total; its answer split as imap-mcp splits it), `UID FETCH` of its newest 20 with the
  summary items (`SUMMARY_ITEMS`, imported so they cannot drift); then the 200 merged by INTERNALDATE and
  the newest 20 kept.

Two rows: the mailboxes unchanged between calls (imap-mcp reuses each mailbox's order and summaries,
`search_cache.py`), and a flag flipped in every mailbox before each call by another connection (unmeasured),
so no order can be reused and imap-mcp sorts all ten again, as raw does. Before the rounds the script checks
that both sides return the same 20 messages and total. Prints a markdown table with both medians and the
median (min-max) of the per-round ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap.fetch import raw_untagged
from imap_mcp.server.imap.promptly import exchange_promptly
from imap_mcp.server.reading.summaries import SUMMARY_ITEMS

sys.path.insert(0, str(Path(__file__).parent))
from populate import generate, write_maildir
from run import CACHE_FIELDS, PASSWORD, USER, raw_client, rounds, server_params

BOXES = [f"Box{n}" for n in range(10)]
PAGE = 20
MINE, RAW = "imap-mcp", "raw imapclient, per mailbox, merged"
UNCHANGED, CHANGED = "unchanged mailboxes", "a flag flipped in every mailbox before each call"


def populate(dovecot: Dovecot, count: int) -> None:
    """A tenth of `count` in each mailbox, indexed, each opened read-write once."""
    uid, gid = (5000, 5000) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    started = time.perf_counter()
    for n, box in enumerate(BOXES):
        end = dt.datetime(2025, 6, 30, 12, tzinfo=dt.UTC) - dt.timedelta(days=365 * n)
        messages = generate(count // len(BOXES), seed=n + 1, years=1.0, end=end, folder=box)
        write_maildir(str(dovecot.maildir(USER) / box), messages, uid, gid)
        dovecot.doveadm("index", "-u", USER, box)
    client = raw_client(dovecot)
    for box in BOXES:
        client.select_folder(box)  # read-write once: clears \Recent
    client.logout()
    print(f"populated {count} messages in {time.perf_counter() - started:.1f} s", file=sys.stderr)


class Raw:
    """One warm connection sending the minimal commands for the same page."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.client = raw_client(dovecot)
        exchange_promptly(self.client)  # as imap-mcp's connections: no delayed ACK per command

    def page(self) -> tuple[int, list[tuple[str, int]]]:
        total, found = 0, []
        for box in BOXES:
            self.client.select_folder(box, readonly=True)
            answer = raw_untagged(self.client, b"SORT", [b"(REVERSE ARRIVAL)", b"UTF-8", b"ALL"], unpack=True)
            uids = [int(uid) for uid in (answer or b"").split()]  # parsed as imap-mcp parses it
            total += len(uids)
            fetched: dict[int, Any] = self.client.fetch(uids[:PAGE], SUMMARY_ITEMS)
            found += [(data[b"INTERNALDATE"], box, uid) for uid, data in fetched.items()]
        found.sort(key=lambda item: (-item[0].timestamp(), BOXES.index(item[1]), -item[2]))
        return total, [(box, uid) for _, box, uid in found[:PAGE]]


class Toucher:
    """Another connection that flips \\Flagged on the oldest message of every mailbox."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.client = raw_client(dovecot)
        self.flagged = False

    def touch(self) -> None:
        self.flagged = not self.flagged
        for box in BOXES:
            self.client.select_folder(box)
            (self.client.add_flags if self.flagged else self.client.remove_flags)([1], [b"\\Flagged"])


async def mine_page(client: Client) -> dict[str, Any]:
    result = await client.call_tool("search_messages", {"mailboxes": BOXES, "limit": PAGE})
    assert not result.is_error, result.content
    page: dict[str, Any] = result.structured_content
    return page


async def measure(dovecot: Dovecot, runs: int) -> dict[str, dict[str, list[float]]]:
    raw, toucher = Raw(dovecot), Toucher(dovecot)
    measured = {}
    async with Client(server_params(dovecot), mode="2026-07-28") as client:
        page = await mine_page(client)
        total, expected = raw.page()
        assert page["total"] == total, (page["total"], total)
        assert [(m["mailbox"], m["uid"]) for m in page["messages"]] == expected

        async def mine_call(_: str) -> float:
            start = time.perf_counter()
            await mine_page(client)
            return (time.perf_counter() - start) * 1000

        async def raw_call(_: str) -> float:
            start = time.perf_counter()
            raw.page()
            return (time.perf_counter() - start) * 1000

        sides = {RAW: raw_call, MINE: mine_call}
        measured[UNCHANGED] = await rounds(UNCHANGED, sides, runs)
        measured[CHANGED] = await rounds(CHANGED, sides, runs, before_each=toucher.touch)
    raw.client.logout()
    toucher.client.logout()
    return measured


def per_round(numerator: list[float], denominator: list[float]) -> str:
    ratios = [n / d for n, d in zip(numerator, denominator, strict=True)]
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def report(args: argparse.Namespace, measured: dict[str, dict[str, list[float]]]) -> str:
    lines = [
        f"| search page 1 across {len(BOXES)} mailboxes, {args.count:,} messages ({args.runs} interleaved rounds; "
        f"median ms) | {RAW} | {MINE} | {MINE} / raw, per round |",
        "|---|---|---|---|",
    ]
    for case, times in measured.items():
        lines.append(
            f"| {case} | {statistics.median(times[RAW]):.1f} | {statistics.median(times[MINE]):.1f} "
            f"| {per_round(times[MINE], times[RAW])} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=9, help="interleaved rounds per row")
    args = parser.parse_args()
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    dovecot = Dovecot(users={USER: PASSWORD}, extra_config=[CACHE_FIELDS], base=base)
    dovecot.start()
    try:
        populate(dovecot, args.count)
        print(report(args, anyio.run(measure, dovecot, args.runs)))
    finally:
        dovecot.stop()


if __name__ == "__main__":
    main()
