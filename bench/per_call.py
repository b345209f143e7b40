"""What each call pays besides the IMAP work it asked for: before and after the cuts of issue #16.

    .venv/bin/python bench/per_call.py [--count 2000] [--runs 21]

Starts its own Dovecot with `--count` messages (`populate.py`, seed 1), then times, in interleaved
rounds (before and after swap which goes first every round), each step a call makes around its IMAP
work, the old way and the way it is done now:

- **unknown-tool check** (`spec_errors.StrictParams`, every `tools/call`): before, every tool was
  listed with its schemas (`MCPServer.list_tools`) to see whether the name is one; now one lookup.
- **before a read of a kept-selected mailbox** (`ImapPool`): before, NOOP, then STATUS UIDVALIDITY
  (the pool), then STATUS of the whole state (the search-order cache): three round trips; now NOOP
  and one STATUS (`mailbox_state.noop_then_status`): two. (Written together they would be one, but
  Dovecot may then answer the STATUS from the view before the NOOP's update.) On 127.0.0.1 a round
  trip is a fraction of a millisecond; to a provider it is 10-100 ms each.
- **a search page's fetches**: before, the INTERNALDATEs of the page and its neighbours, then the
  summaries of the page: two round trips; now the summaries of the page and its neighbours at once.
- **reading 20 summaries** (ENVELOPE, BODYSTRUCTURE, …): imapclient's FETCH parser before,
  `imap.fetch_parser` now (same results, checked here).
- **a page shown again** (`reading/summaries.py`): before, the summaries of the page and its
  neighbours fetched and read every time; now what never changes comes from the summary cache and
  only the page's flags are fetched (`UID FETCH <page> (FLAGS)`).
- **the client's check of a result** (every SDK client validates structured content against the
  tool's output schema): a 20-summary page against the schema as pydantic writes it (`anyOf` for
  optional fields, `$ref`s) and as published now (`tools/output_schemas.compact`), with `jsonschema`
  validators built once, as the SDK's client caches them.
- **an approval's seals** (not repeated work to cut, measured to show why it stays): the project's own
  seal of the claim (target fingerprint, question, pinned UIDs) inside the SDK's requestState envelope;
  each binds what the other cannot (see `protocol/approval.py`). Sealing and opening both, small and
  with 1,600 scattered pinned UIDs, against the SDK envelope alone.

Prints one markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from imapclient import IMAPClient
from imapclient.response_parser import parse_fetch_response as imapclient_parse
from jsonschema.validators import validator_for
from mcp.server.request_state import RequestStateSecurity
from pydantic import TypeAdapter

from imap_mcp.protocol.approval import APPROVAL_TTL
from imap_mcp.sealing import Claim, KeyRing, Sealer
from imap_mcp.server.config import load_settings
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap import fetch as imap_fetch
from imap_mcp.server.imap.fetch_parser import parse_fetch_response
from imap_mcp.server.imap.mailbox_state import STATE_ITEMS, noop_then_status
from imap_mcp.server.imap.pool import examine
from imap_mcp.server.imap.uid_sets import compress
from imap_mcp.server.reading.search import SearchPage
from imap_mcp.server.reading.summaries import SUMMARY_ITEMS, MessageSummary, SummaryCache, describe
from imap_mcp.server.serving.app import build_server
from imap_mcp.server.tools.output_schemas import compact

sys.path.insert(0, str(Path(__file__).parent))
from populate import generate, write_maildir
from run import CACHE_FIELDS, PASSWORD, USER, raw_client, server_params

Step = Callable[[], Any]


def timed_us(step: Step) -> float:
    start = time.perf_counter()
    step()
    return (time.perf_counter() - start) * 1e6


def rounds(before: Step, after: Step, runs: int) -> tuple[list[float], list[float]]:
    """One unmeasured call each, then `runs` rounds of one call each, the order swapped every round."""
    before(), after()
    times: dict[str, list[float]] = {"before": [], "after": []}
    for round_number in range(runs):
        sides = [("before", before), ("after", after)]
        for name, step in sides if round_number % 2 == 0 else reversed(sides):
            times[name].append(timed_us(step))
    return times["before"], times["after"]


def tool_checks(dovecot: Dovecot, loop: asyncio.AbstractEventLoop) -> tuple[Step, Step]:
    """Both checks as coroutines on one event loop, so both pay the same to run there."""
    mcp = build_server(load_settings(server_params(dovecot).env))

    async def listed() -> bool:
        return "search_messages" in {tool.name for tool in await mcp.list_tools()}

    async def looked_up() -> bool:
        return mcp._tool_manager.get_tool("search_messages") is not None

    return lambda: loop.run_until_complete(listed()), lambda: loop.run_until_complete(looked_up())


def syncs(client: IMAPClient) -> tuple[Step, Step]:
    def three_round_trips() -> Any:
        client.noop()
        client.folder_status("INBOX", [b"UIDVALIDITY"])
        return client.folder_status("INBOX", list(STATE_ITEMS))

    return three_round_trips, lambda: noop_then_status(client, "INBOX")


def page_fetches(client: IMAPClient, window: list[int]) -> tuple[Step, Step]:
    page = window[1:-1]

    def two_fetches() -> Any:
        imap_fetch.fetch(client, window, ["INTERNALDATE"])
        return imap_fetch.fetch(client, page, SUMMARY_ITEMS)

    return two_fetches, lambda: imap_fetch.fetch(client, window, SUMMARY_ITEMS)


def parsers(client: IMAPClient, page: list[int]) -> tuple[Step, Step]:
    responses = list(imap_fetch._responses(imap_fetch._fetched(client, True, compress(page), SUMMARY_ITEMS)))
    theirs = [dict(imapclient_parse(r, normalise_times=False, uid_is_key=False)) for r in responses]
    if [parse_fetch_response(r) for r in responses] != theirs:
        raise SystemExit("the two parsers disagree: the benchmark would compare different work")
    return (
        lambda: [imapclient_parse(r, normalise_times=False, uid_is_key=False) for r in responses],
        lambda: [parse_fetch_response(r) for r in responses],
    )


def seals(pinned: str) -> tuple[Step, Step, int, int]:
    """For one approval's state: (the SDK envelope around the claim as plain JSON, i.e. our seal dropped;
    the envelope around our seal, as it is; the sizes of both tokens)."""
    ring = KeyRing([os.urandom(32).hex()])
    ours = Sealer(ring, purpose="approval", ttl=APPROVAL_TTL)
    codec = RequestStateSecurity(keys=list(ring.keys), ttl=APPROVAL_TTL).codec
    assert codec is not None
    claim = Claim("f" * 64, "q" * 32, pinned)
    plain = f'{{"fp": "{claim.fingerprint}", "q": "{claim.question}", "p": "{pinned}"}}'.encode()

    def envelope_only() -> bytes:
        return codec.unseal(codec.seal(plain))

    def both() -> Any:
        token = codec.unseal(codec.seal(ours.seal(claim, "alice").encode())).decode()
        return ours.open(token, "alice")

    return envelope_only, both, len(codec.seal(plain)), len(codec.seal(ours.seal(claim, "alice").encode()))


def summary_pages(client: IMAPClient, window: list[int]) -> tuple[Step, Step]:
    examined, cache = examine(client, "INBOX"), SummaryCache()
    page = window[1:-1]

    def uncached() -> list[MessageSummary]:
        return describe(client, examined, window, None).summaries(client, page, None)

    def cached() -> list[MessageSummary]:
        return describe(client, examined, window, cache).summaries(client, page, cache)

    assert [s.model_dump() for s in uncached()] == [s.model_dump() for s in cached()]
    return uncached, cached


def schema_checks(client: IMAPClient, window: list[int]) -> tuple[Step, Step]:
    examined = examine(client, "INBOX")
    summaries = describe(client, examined, window, None).summaries(client, window[1:-1], None)
    result = SearchPage(mailbox="INBOX", total=len(window), offset=0, messages=summaries)
    data = result.model_dump(mode="json", by_alias=True)
    schema = TypeAdapter(SearchPage).json_schema()
    pydantic_written, published = (validator_for(s)(s) for s in (schema, compact(schema)))
    assert not list(pydantic_written.iter_errors(data)) and not list(published.iter_errors(data))
    return (lambda: list(pydantic_written.iter_errors(data))), (lambda: list(published.iter_errors(data)))


def row(label: str, before: list[float], after: list[float], unit: str = "us") -> str:
    ratios = [b / a for b, a in zip(before, after, strict=True)]
    return (
        f"| {label} | {statistics.median(before):.0f} {unit} | {statistics.median(after):.0f} {unit} "
        f"| {statistics.median(ratios):.1f}x ({min(ratios):.1f}-{max(ratios):.1f}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=21, help="interleaved rounds per row")
    args = parser.parse_args()
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    loop = asyncio.new_event_loop()
    with Dovecot(users={USER: PASSWORD}, extra_config=[CACHE_FIELDS], base=base) as dovecot:
        uid, gid = (5000, 5000) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
        write_maildir(str(dovecot.maildir(USER)), generate(args.count, seed=1), uid, gid)
        dovecot.doveadm("index", "-u", USER, "INBOX")
        client = raw_client(dovecot)
        client.select_folder("INBOX", readonly=True)
        window = sorted(client.search(["ALL"]))[-22:]
        lines = [
            "| per call, besides the IMAP work asked for "
            f"({args.runs} interleaved rounds; median) | before | after | before / after, per round |",
            "|---|---|---|---|",
            row(
                "unknown-tool check (`StrictParams`, every tools/call)", *rounds(*tool_checks(dovecot, loop), args.runs)
            ),
            row("NOOP + STATUS before a kept-selected read: 3 round trips -> 2", *rounds(*syncs(client), args.runs)),
            row("search page fetches: 2 round trips -> 1", *rounds(*page_fetches(client, window), args.runs)),
            row(
                "reading 20 summaries: imapclient's parser -> fetch_parser",
                *rounds(*parsers(client, window[1:-1]), args.runs),
            ),
            row(
                "a page shown again: 22 summaries fetched and read -> 20 flags fetched (summary cache)",
                *rounds(*summary_pages(client, window), args.runs),
            ),
            row(
                "client's check of a 20-summary page: schema as pydantic writes it -> compacted",
                *rounds(*schema_checks(client, window), args.runs),
            ),
        ]
        client.logout()
    lines += [
        "",
        f"| an approval's state, sealed and opened ({args.runs} interleaved rounds; median) | SDK envelope alone "
        "| our seal inside the envelope (as it is) | size: claim as JSON in the envelope -> our seal in it |",
        "|---|---|---|---|",
    ]
    scattered = ",".join(f"{3 * n}:{3 * n + 1}" for n in range(1, 801))
    for label, pinned in (("small (a few ids)", ""), ("pinning 1,600 scattered UIDs (a change by query)", scattered)):
        envelope, both, envelope_size, both_size = seals(pinned)
        alone, inside = rounds(envelope, both, args.runs)
        lines.append(
            f"| {label} | {statistics.median(alone):.0f} us | {statistics.median(inside):.0f} us "
            f"| {envelope_size:,} -> {both_size:,} characters |"
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
