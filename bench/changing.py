"""Searching a mailbox that keeps changing, and a bulk move by query, on a large INBOX.

    .venv/bin/python bench/changing.py [--count 100000] [--runs 7] [--move 5000]

Starts its own Dovecot (on /dev/shm when there is one), writes `--count` messages into INBOX
(`populate.py`, seed 1), indexes them and opens INBOX read-write once (no `\\Recent` left). Then,
for page 1 of an unfiltered search and of a FROM search ("Walter Rossi"), in four cases — (a) the
mailbox unchanged, (b) another client flipped `\\Flagged` on the oldest message, (c) one new message
arrived (from Walter Rossi, so both searches change), (d) one message was expunged — interleaved
rounds (`run.rounds`: one unmeasured warm-up per side, then one call per side per round; the change
is made again, unmeasured, right before each imap-mcp call, so each call follows exactly one) of:

- imap-mcp: `search_messages` through `imap-mcp stdio` and the SDK client (2026-07-28);
- raw: a kept-selected imapclient connection sorting again (`UID SORT (REVERSE ARRIVAL)` + `UID
  FETCH` of the newest 20 with the items imap-mcp fetches): what an exact answer costs without memory;
- raw floor: the same connection's `NOOP` + `STATUS MESSAGES` + `FETCH n-19:n` (sequence numbers;
  newest 20 by arrival, total = MESSAGES), which no search can beat;
- the SDK's trivial call: `get_message` with an id that does not decode, on the same imap-mcp client:
  a whole tool call (arguments, tool, error result) that touches no IMAP;
- the SDK carrying the page: `sdk_carrier.py` over stdio, the SDK alone returning the page 1 imap-mcp
  returned for the same search before the rounds, under the same output schema: what a server on this
  SDK pays to return those 20 summaries (serialised twice, validated by the client), with no IMAP and
  none of imap-mcp's code.

Also get_message (the newest multipart message) against raw's two fetches and the SDK carrying the
same result, and one move of about `--move` messages by query (`before` the date that many messages
in, copied back first so the run can be repeated): time, messages moved and the size of the result.
Prints markdown tables; the cache's memory is `OrderCache.memory_bytes`, four bytes per remembered
UID (reported for `--count`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import ElicitRequestParams, ElicitResult

from imap_mcp.server.demo.dovecot import Dovecot

sys.path.insert(0, str(Path(__file__).parent))
from populate import generate, write_maildir
from run import CACHE_FIELDS, PASSWORD, SENDER, USER, Raw, raw_client, rounds, server_params

KINDS = {"page 1": {}, "FROM page 1": {"from": SENDER}}
CRITERIA = {"page 1": ["ALL"], "FROM page 1": ["FROM", SENDER]}
CASES = ("(a) unchanged", "(b) a flag flipped", "(c) one new message", "(d) one message expunged")
MINE, RAW, FLOOR, SDK = "imap-mcp", "raw SORT + FETCH", "raw floor (NOOP + STATUS + FETCH n-19:n)", "SDK trivial call"
SDK_PAGE = "SDK carrying the page"
SDK_MESSAGE = "SDK carrying the message"
VALIDATION = "of which the SDK client's output-schema validation"


def populate(dovecot: Dovecot, count: int) -> None:
    uid, gid = (5000, 5000) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    started = time.perf_counter()
    write_maildir(str(dovecot.maildir(USER)), generate(count, seed=1), uid, gid)
    dovecot.doveadm("index", "-u", USER, "INBOX")
    client = raw_client(dovecot)
    client.select_folder("INBOX")  # read-write once: clears \Recent
    client.logout()
    print(f"populated {count} messages in {time.perf_counter() - started:.1f} s", file=sys.stderr)


class OtherClient:
    """Another mail client making the change of each case."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.client = raw_client(dovecot)
        self.client.select_folder("INBOX")
        self.flagged = False
        self.sent = 0

    def change(self, case: str) -> Callable[[], None] | None:
        return {CASES[1]: self.flip, CASES[2]: self.arrive, CASES[3]: self.expunge}.get(case)

    def flip(self) -> None:
        oldest = min(self.client.search(["ALL"]))
        (self.client.remove_flags if self.flagged else self.client.add_flags)([oldest], [b"\\Flagged"])
        self.flagged = not self.flagged

    def arrive(self) -> None:
        self.sent += 1
        raw = (
            f"From: {SENDER} <walter.rossi@example.com>\r\nTo: alice@example.com\r\nSubject: bench {self.sent}\r\n"
            "Date: Tue, 1 Dec 2026 09:00:00 +0000\r\nMIME-Version: 1.0\r\n\r\nnew\r\n"
        )
        self.client.append("INBOX", raw.encode(), msg_time=dt.datetime.now(dt.UTC))

    def expunge(self) -> None:
        oldest = min(self.client.search(["ALL"]))
        self.client.add_flags([oldest], [b"\\Deleted"])
        self.client.uid_expunge([oldest])


def floor(raw: Raw) -> None:
    """NOOP and STATUS (the total), then FETCH the last 20 sequence numbers: newest 20 by arrival."""
    raw.client.noop()
    total = raw.client.folder_status("INBOX", [b"MESSAGES"])[b"MESSAGES"]
    raw.client._imap.fetch(f"{max(total - 19, 1)}:{total}", "(FLAGS INTERNALDATE RFC822.SIZE ENVELOPE BODYSTRUCTURE)")


def timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def time_validation(client: Client) -> list[float]:
    """Record how long the SDK client takes to validate each tool result against the tool's output schema
    (ms; part of every imap-mcp call measured here, not of the trivial call, which returns no structured
    content)."""
    validations: list[float] = []
    validate = client.session.validate_tool_result

    async def timed_validate(name: str, result: Any) -> None:
        start = time.perf_counter()
        await validate(name, result)
        validations.append((time.perf_counter() - start) * 1000)

    client.session.validate_tool_result = timed_validate  # type: ignore[method-assign]
    return validations


async def search_rounds(
    client: Client, sdk: Client, raw: Raw, other: OtherClient, runs: int
) -> dict[tuple[str, str], Any]:
    validations = time_validation(client)
    change: list[Callable[[], None] | None] = [None]  # the case's change, made before each imap-mcp call

    async def mine_call(kind: str) -> float:
        if (make := change[0]) is not None:
            make()  # unmeasured; the only change since imap-mcp's previous call (the other sides keep none)
        start = time.perf_counter()
        result = await client.call_tool("search_messages", KINDS[kind])
        assert not result.is_error, result.content
        return (time.perf_counter() - start) * 1000

    async def raw_call(kind: str) -> float:
        return timed(lambda: raw.page(CRITERIA[kind]))

    async def floor_call(kind: str) -> float:
        return timed(lambda: floor(raw))

    async def sdk_call(kind: str) -> float:
        start = time.perf_counter()
        result = await client.call_tool("get_message", {"id": "imap.not-an-id"})
        assert result.is_error, result.content
        return (time.perf_counter() - start) * 1000

    async def sdk_page_call(kind: str) -> float:
        start = time.perf_counter()
        result = await sdk.call_tool("search_messages", {"kind": kind})
        assert not result.is_error, result.content
        return (time.perf_counter() - start) * 1000

    sides = {RAW: raw_call, MINE: mine_call, FLOOR: floor_call, SDK: sdk_call, SDK_PAGE: sdk_page_call}
    measured: dict[tuple[str, str], Any] = {}
    for kind in KINDS:
        for case in CASES:
            validations.clear()
            change[0] = other.change(case)
            measured[kind, case] = await rounds(kind, sides, runs)
            measured[kind, case][VALIDATION] = validations[-runs:]  # the warm-up call's comes first
    return measured


async def read_rounds(client: Client, sdk: Client, raw: Raw, runs: int) -> dict[str, list[float]]:
    async def mine_call(_: str) -> float:
        start = time.perf_counter()
        result = await client.call_tool("get_message", {"mailbox": "INBOX", "uid": raw.read_uid})
        assert not result.is_error, result.content
        return (time.perf_counter() - start) * 1000

    async def raw_call(_: str) -> float:
        return timed(raw.read)

    async def sdk_message_call(_: str) -> float:
        start = time.perf_counter()
        result = await sdk.call_tool("get_message", {})
        assert not result.is_error, result.content
        return (time.perf_counter() - start) * 1000

    return await rounds("get_message", {"raw": raw_call, MINE: mine_call, SDK_MESSAGE: sdk_message_call}, runs)


async def bulk_move(client: Client, raw: Raw, count: int) -> dict[str, Any]:
    """Move about `count` of the oldest messages to a new mailbox by query, approved in a dialog."""
    oldest = raw.client.sort(["ARRIVAL"], ["ALL"])[count]
    before = raw.client.fetch([oldest], ["INTERNALDATE"])[oldest][b"INTERNALDATE"].date()
    raw.client.create_folder("Moved")
    args = {"query": {"before": before.isoformat()}, "destination": "Moved"}
    start = time.perf_counter()
    result = await client.call_tool("move_messages", args)
    elapsed = time.perf_counter() - start
    assert not result.is_error, result.content
    content = result.structured_content or {}
    return {
        "seconds": elapsed,
        "moved": content["count"],
        "structured_bytes": len(json.dumps(content)),
        "text_bytes": sum(len(getattr(block, "text", "")) for block in result.content),
    }


@contextlib.asynccontextmanager
async def carrier(client: Client, read_uid: int) -> AsyncIterator[Client]:
    """An SDK client of `sdk_carrier.py` serving the results `client`'s imap-mcp gives now: page 1 of each
    search (`KINDS`) and get_message of `read_uid`, under the same output schemas."""
    pages = {kind: await client.call_tool("search_messages", arguments) for kind, arguments in KINDS.items()}
    message = await client.call_tool("get_message", {"mailbox": "INBOX", "uid": read_uid})
    assert not message.is_error and not any(page.is_error for page in pages.values())
    assert all(len(page.structured_content["messages"]) == 20 for page in pages.values())
    tools = ("search_messages", "get_message")
    schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools if tool.name in tools}
    held = {
        "pages": {kind: page.structured_content for kind, page in pages.items()},
        "message": message.structured_content,
    }
    with tempfile.TemporaryDirectory() as directory:
        results = Path(directory) / "results.json"
        results.write_text(json.dumps(held))
        script = str(Path(__file__).with_name("sdk_carrier.py"))
        params = StdioServerParameters(command=sys.executable, args=[script, str(results)])
        async with Client(params, mode="2026-07-28") as sdk:
            carried = {tool.name: tool.output_schema for tool in (await sdk.list_tools()).tools}
            assert carried == schemas, "not imap-mcp's output schemas"
            yield sdk


async def approve(context: object, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"approve": True})


async def measure(dovecot: Dovecot, raw: Raw, runs: int, move: int) -> dict[str, Any]:
    other = OtherClient(dovecot)
    try:
        async with Client(server_params(dovecot), mode="2026-07-28", elicitation_callback=approve) as client:
            await client.list_tools()
            async with carrier(client, raw.read_uid) as sdk:
                searched = await search_rounds(client, sdk, raw, other, runs)
                read = await read_rounds(client, sdk, raw, runs)
            moved = await bulk_move(client, raw, move)
    finally:
        other.client.logout()
    return {"search": searched, "read": read, "move": moved}


def median(values: list[float]) -> float:
    return statistics.median(values)


def per_round(numerator: list[float], *denominators: list[float]) -> str:
    ratios = [n / sum(d) for n, *d in zip(numerator, *denominators, strict=True)]
    return f"{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def report(args: argparse.Namespace, measured: dict[str, Any]) -> str:
    lines = [
        f"| search on {args.count:,} messages ({args.runs} interleaved rounds; median ms) | {MINE} | {VALIDATION} "
        f"| {RAW} | {FLOOR} | {SDK} | {SDK_PAGE} | {MINE} / ({FLOOR} + {SDK}), per round "
        f"| the same without the validation | {MINE} / ({FLOOR} + {SDK_PAGE}), per round | {MINE} / {RAW}, per round |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (kind, case), times in measured["search"].items():
        served = [mine - check for mine, check in zip(times[MINE], times[VALIDATION], strict=True)]
        medians = " | ".join(f"{median(times[side]):.1f}" for side in (MINE, VALIDATION, RAW, FLOOR, SDK, SDK_PAGE))
        lines.append(
            f"| {kind}, {case} | {medians} | {per_round(times[MINE], times[FLOOR], times[SDK])} "
            f"| {per_round(served, times[FLOOR], times[SDK])} "
            f"| {per_round(times[MINE], times[FLOOR], times[SDK_PAGE])} | {per_round(times[MINE], times[RAW])} |"
        )
    read = measured["read"]
    sdk_all = [t for times in measured["search"].values() for t in times[SDK]]
    lines += [
        "",
        f"| get_message ({args.runs} rounds; median ms) | imap-mcp | raw (2 fetches) | {SDK_MESSAGE} "
        "| imap-mcp / (raw + median SDK trivial call), per round "
        f"| imap-mcp / (raw + {SDK_MESSAGE}), per round |",
        "|---|---|---|---|---|---|",
        f"| newest multipart message | {median(read[MINE]):.1f} | {median(read['raw']):.1f} "
        f"| {median(read[SDK_MESSAGE]):.1f} "
        f"| {per_round(read[MINE], read['raw'], [median(sdk_all)] * len(read['raw']))} "
        f"| {per_round(read[MINE], read['raw'], read[SDK_MESSAGE])} |",
        "",
        "| move by query (one call, dialog approved) | seconds | messages moved | structured content | text |",
        "|---|---|---|---|---|",
        f"| `before` the {args.move:,}th oldest message's day | {measured['move']['seconds']:.2f} | "
        f"{measured['move']['moved']:,} | {measured['move']['structured_bytes']:,} bytes | "
        f"{measured['move']['text_bytes']:,} bytes |",
        "",
        f"Order cache memory: 4 bytes per remembered UID, at most 8 results: {4 * args.count / 1e6:.1f} MB per "
        f"unfiltered result on {args.count:,} messages, {32 * args.count / 1e6:.1f} MB at most.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7, help="interleaved rounds per row")
    parser.add_argument("--move", type=int, default=5_000, help="about how many messages the bulk move moves")
    args = parser.parse_args()
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    dovecot = Dovecot(users={USER: PASSWORD}, extra_config=[CACHE_FIELDS], base=base)
    dovecot.start()
    try:
        populate(dovecot, args.count)
        raw = Raw(dovecot)
        measured = anyio.run(measure, dovecot, raw, args.runs, args.move)
        raw.client.logout()
        print(report(args, measured))
    finally:
        dovecot.stop()


if __name__ == "__main__":
    main()
