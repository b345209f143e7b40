"""get_thread of a 20-message conversation in a 100,000-message INBOX, against raw imapclient in the same run.

    .venv/bin/python bench/threads.py [--count 100000] [--runs 9]

Starts its own Dovecot (on /dev/shm when there is one), writes `--count` messages into INBOX
(`populate.py`, seed 1), indexes them and opens INBOX read-write once (no `\\Recent` left), then
appends two conversations of 20 messages each (a tree: each message answers an earlier one, with
In-Reply-To and References, as mail clients write them):

- "in INBOX": all 20 in INBOX;
- "5 of them in Sent": my five answers in Sent, the other 15 in INBOX (so get_thread must search the
  100,000-message INBOX for the ids of the Sent messages, as it does for any conversation with replies).

Asked for the 10th message, in interleaved rounds (`run.rounds`: one unmeasured warm-up per side):

- imap-mcp: `get_thread {"id": …}` through `imap-mcp stdio` and the SDK client (2026-07-28);
- raw THREAD + FETCH: a warm imapclient connection keeping INBOX selected: `UID THREAD REFS UTF-8 ALL`,
  the thread holding the message taken from the answer (with imap-mcp's own `thread_containing`, so
  no parser is slower than imap-mcp's), and `UID FETCH` of its members with the summary items
  (`SUMMARY_ITEMS`): the minimum for the INBOX part of the answer;
- raw, the same commands: that, plus what get_thread also sends for the same answer: on a second
  warm connection, EXAMINE and `UID SEARCH` of Sent, Archive and Drafts for the ids of the thread's
  messages (Message-ID, In-Reply-To, References: `any_message_id`, chunked as imap-mcp chunks), the
  hits' link headers and summaries; and on the first, a `UID SEARCH` of INBOX for the ids found
  elsewhere (and the link headers and summaries of its new hits);
- the SDK's trivial call: `get_message` with an id that does not decode: a whole tool call that touches
  no IMAP.

Before the rounds the script checks that raw and imap-mcp return the same messages. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import time
from collections.abc import Callable
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import anyio
from imapclient import IMAPClient
from mcp import Client

from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap.by_message_id import any_message_id, chunks
from imap_mcp.server.imap.message_ids import MessageRef
from imap_mcp.server.reading.summaries import SUMMARY_ITEMS
from imap_mcp.server.reading.thread_links import LINK_ITEM, links_of
from imap_mcp.server.reading.threads import _ID_BYTES_PER_SEARCH, _IDS_PER_SEARCH, SEARCHED_FIELDS, thread_containing

sys.path.insert(0, str(Path(__file__).parent))
from changing import populate
from run import CACHE_FIELDS, PASSWORD, USER, Side, raw_client, rounds, server_params

SIZE = 20
ASKED = 9  #: the 10th message of the conversation is the one asked about
MINE, RAW, SAME, SDK = "imap-mcp", "raw THREAD + FETCH", "raw, the same commands", "SDK trivial call"
OTHERS = ("Sent", "Archive", "Drafts")
KINDS = {"in INBOX": 0, "5 of them in Sent": 5}


def conversation(tag: str, in_sent: int) -> list[tuple[str, bytes, dt.datetime]]:
    """(mailbox, message, date) of a 20-message tree: each answers an earlier one (seeded); every fourth one
    (from 3 on), `in_sent` of them, is mine, in Sent."""
    rng = random.Random(7)
    ids = [f"<{tag}.{n}@bench.example>" for n in range(SIZE)]
    chains: list[list[str]] = []
    out = []
    mine = {3 + 4 * k for k in range(in_sent)}
    for n in range(SIZE):
        message = EmailMessage()
        message["From"] = "alice@example.com" if n in mine else f"person{n}@example.net"
        message["To"] = "someone@example.net" if n in mine else "alice@example.com"
        message["Subject"] = ("Re: " if n else "") + f"Plan {tag}"
        when = dt.datetime(2025, 7, 1, 9, tzinfo=dt.UTC) + dt.timedelta(hours=n)
        message["Date"] = format_datetime(when)
        message["Message-ID"] = ids[n]
        chain: list[str] = []
        if n:
            parent = rng.randrange(n)
            chain = [*chains[parent], ids[parent]][-10:]
            message["In-Reply-To"] = ids[parent]
            message["References"] = " ".join(chain)
        chains.append(chain)
        message.set_content(f"Message {n} of the plan.\n")
        out.append(("Sent" if n in mine else "INBOX", message.as_bytes(), when))
    return out


def append(dovecot: Dovecot, messages: list[tuple[str, bytes, dt.datetime]]) -> list[str]:
    """Append them; the id of each, in order."""
    client = raw_client(dovecot)
    ids = []
    for mailbox, raw, when in messages:
        answer = client.append(mailbox, raw, msg_time=when)
        uid = int(answer.split(b"]")[0].split()[-1])
        uidvalidity = int(client.folder_status(mailbox, [b"UIDVALIDITY"])[b"UIDVALIDITY"])
        ids.append(MessageRef(mailbox, uidvalidity, uid).id)
    client.logout()
    return ids


def _link_ids(block: bytes) -> set[str]:
    return set(links_of(MessageRef("x", 1, 1), block).ids)


class Raw:
    """Two warm connections: one keeping INBOX selected, one for the other mailboxes."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.inbox = raw_client(dovecot)
        self.inbox.select_folder("INBOX", readonly=True)
        self.elsewhere = raw_client(dovecot)

    def thread(self, uid: int) -> dict[int, Any]:
        """THREAD REFS of INBOX, the thread holding `uid`, its members' summaries (and link headers)."""
        answer = self.inbox._raw_command_untagged(b"THREAD", [b"REFS", b"UTF-8", b"ALL"])
        members = thread_containing(b" ".join(line for line in answer if isinstance(line, bytes)), uid)
        fetched: dict[int, Any] = self.inbox.fetch(members, [*SUMMARY_ITEMS, LINK_ITEM])
        return fetched

    def same(self, uid: int) -> set[tuple[str, int]]:
        """`thread`, then the other mailboxes searched for its ids, then INBOX for the ids found there."""
        found = {("INBOX", u): data for u, data in self.thread(uid).items()}
        known = set().union(*(_link_ids(_block(data)) for data in found.values()))
        elsewhere: set[str] = set()
        for mailbox in OTHERS:
            self.elsewhere.select_folder(mailbox, readonly=True)
            hits = search(self.elsewhere, sorted(known))
            if hits:
                for u, data in self.elsewhere.fetch(hits, [*SUMMARY_ITEMS, LINK_ITEM]).items():
                    found[mailbox, u] = data
                    elsewhere |= _link_ids(_block(data))
        new = sorted(elsewhere - known)
        hits = [u for u in search(self.inbox, new) if ("INBOX", u) not in found] if new else []
        if hits:
            found |= {("INBOX", u): data for u, data in self.inbox.fetch(hits, [*SUMMARY_ITEMS, LINK_ITEM]).items()}
        return set(found)


def search(client: IMAPClient, ids: list[str]) -> list[int]:
    hits: set[int] = set()
    for chunk in chunks(ids, _IDS_PER_SEARCH, _ID_BYTES_PER_SEARCH):
        hits.update(client.search(any_message_id(chunk, SEARCHED_FIELDS)))
    return sorted(hits)


def _block(data: dict[bytes, Any]) -> bytes:
    return next((v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS")), b"")


def timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


async def measure(dovecot: Dovecot, raw: Raw, asked: dict[str, str], runs: int) -> dict[str, dict[str, list[float]]]:
    measured: dict[str, dict[str, list[float]]] = {}
    async with Client(server_params(dovecot), mode="2026-07-28") as client:
        await client.list_tools()
        for kind, message_id in asked.items():
            uid = int(message_id.rsplit(".", 1)[1])
            result = await client.call_tool("get_thread", {"id": message_id})
            assert not result.is_error, result.content
            mine = {
                (location["mailbox"], int(location["id"].rsplit(".", 1)[1]))
                for entry in result.structured_content["messages"]
                for location in entry["locations"]
            }
            assert len(result.structured_content["messages"]) == SIZE, kind
            assert mine == raw.same(uid), kind
            assert {u for box, u in mine if box == "INBOX"} == set(raw.thread(uid)), kind

            measured[kind] = await rounds(kind, sides(client, raw, message_id, uid), runs)
    return measured


def sides(client: Client, raw: Raw, message_id: str, uid: int) -> dict[str, Side]:
    """One call of each side for the conversation of `message_id` (`uid` in INBOX)."""

    async def mine_call(_: str) -> float:
        start = time.perf_counter()
        answer = await client.call_tool("get_thread", {"id": message_id})
        assert not answer.is_error, answer.content
        return (time.perf_counter() - start) * 1000

    async def raw_call(_: str) -> float:
        return timed(lambda: raw.thread(uid))

    async def same_call(_: str) -> float:
        return timed(lambda: raw.same(uid))

    async def sdk_call(_: str) -> float:
        start = time.perf_counter()
        answer = await client.call_tool("get_message", {"id": "imap.not-an-id"})
        assert answer.is_error, answer.content
        return (time.perf_counter() - start) * 1000

    return {RAW: raw_call, MINE: mine_call, SAME: same_call, SDK: sdk_call}


def per_round(numerator: list[float], *denominators: list[float]) -> str:
    ratios = [n / sum(d) for n, *d in zip(numerator, *denominators, strict=True)]
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def report(args: argparse.Namespace, measured: dict[str, dict[str, list[float]]]) -> str:
    lines = [
        f"| get_thread, {SIZE} messages, {args.count:,} in INBOX ({args.runs} interleaved rounds; median ms) "
        f"| {MINE} | {RAW} | {SAME} | {SDK} | {MINE} / ({RAW} + {SDK}), per round "
        f"| {MINE} / ({SAME} + {SDK}), per round |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, times in measured.items():
        medians = " | ".join(f"{statistics.median(times[side]):.1f}" for side in (MINE, RAW, SAME, SDK))
        lines.append(
            f"| {kind} | {medians} | {per_round(times[MINE], times[RAW], times[SDK])} "
            f"| {per_round(times[MINE], times[SAME], times[SDK])} |"
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
        asked = {
            kind: append(dovecot, conversation(f"t{n}", in_sent))[ASKED]
            for n, (kind, in_sent) in enumerate(KINDS.items())
        }
        raw = Raw(dovecot)
        measured = anyio.run(measure, dovecot, raw, asked, args.runs)
        raw.inbox.logout()
        raw.elsewhere.logout()
        print(report(args, measured))
    finally:
        dovecot.stop()


if __name__ == "__main__":
    main()
