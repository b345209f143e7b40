"""One benchmark run: 100,000 messages in a private Dovecot, imap-mcp against raw imapclient and mcp-email-server.

    .venv/bin/python bench/run.py [--count 100000] [--runs 9] [--processes 3] [--peer-projection]

Starts its own Dovecot (on /dev/shm when there is one) and stops it at the end. Populates INBOX by
writing Maildir files, runs `doveadm index`, then opens INBOX read-write once so that no message is
`\\Recent` any more (as on any mailbox a client has opened). Measures search page 1 (newest 20 with
the exact total), a filtered search (FROM "Walter Rossi", 0.85%) and reading one message, in
`--runs` interleaved rounds per operation: one raw imapclient call (a warm, kept-selected connection
doing the minimal commands), one imap-mcp call (`imap-mcp stdio`, SDK client), and one
mcp-email-server 1.13.3 call when `bench/.venv-peer` has it. On a shared machine the load moves
between blocks of calls; within one round it hardly does, so the per-round ratio is the figure to read.

Also: the first and the second call of `--processes` fresh imap-mcp processes; with
`--peer-projection`, mcp-email-server with its SQLite projection (build time, peak RSS, then warm
page-1 rounds); and the growth of Python's peak memory while get_message reads a 60 MB message.
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import ssl
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from imapclient import IMAPClient
from mcp import Client, StdioServerParameters

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.imap.lookup import MessageSelection
from imap_mcp.server.imap.pool import ImapPool, InMailbox
from imap_mcp.server.reading.reader import HEADER_FIELDS, read_message
from imap_mcp.server.reading.summaries import SUMMARY_ITEMS
from imap_mcp.server.setting_values import Secret

sys.path.insert(0, str(Path(__file__).parent))
from populate import generate, write_maildir

HERE = Path(__file__).parent
PEER_PYTHON = HERE / ".venv-peer" / "bin" / "python"
PROJECTION_ROWS = "100000"
USER, PASSWORD = "alice", "alice-pw"
SENDER = "Walter Rossi"
CACHE_FIELDS = (
    "mail_always_cache_fields = flags date.received date.sent size.virtual hdr.from hdr.to hdr.cc hdr.subject "
    "hdr.date hdr.message-id hdr.in-reply-to hdr.references imap.bodystructure"
)
#: an operation measured with a flag changed in INBOX (by another connection) before every call, so no
#: cached order can be reused: imap-mcp has to SORT again, as raw does every time
CHANGED = ", mailbox changed before each call"
OPERATIONS = (
    "search page 1",
    "search page 1" + CHANGED,
    "filtered search",
    "filtered search" + CHANGED,
    "get_message",
)
CRITERIA: dict[str, list[Any]] = {"search page 1": ["ALL"], "filtered search": ["FROM", SENDER]}
#: what get_message fetches first, before it knows which part holds the text
READ_HEAD = ["FLAGS", "BODYSTRUCTURE", f"BODY.PEEK[HEADER.FIELDS ({' '.join(HEADER_FIELDS)})]"]
RAW, MINE, PEER = "raw imapclient", "imap-mcp", "mcp-email-server"


def raw_client(dovecot: Dovecot) -> IMAPClient:
    context = ssl.create_default_context(cafile=str(dovecot.cert_file))
    client = IMAPClient("127.0.0.1", dovecot.tls_port, ssl_context=context)
    client.login(USER, PASSWORD)
    return client


def big_message() -> bytes:
    """About 60 MB as stored: a 30 MB text body (39 MB quoted-printable) and a 15 MB attachment (20 MB base64)."""
    message = EmailMessage()
    message["Subject"] = "Huge"
    message["From"] = "big@example.com"
    message.set_content(
        ("A long line of log text with some umlauts äöü, repeated. " * 2 + "\n") * 260_000, cte="quoted-printable"
    )
    message.add_attachment(
        os.urandom(15 * 1024 * 1024), maintype="application", subtype="octet-stream", filename="blob.bin"
    )
    return message.as_bytes()


def populate(dovecot: Dovecot, count: int) -> int:
    """Write `count` messages into INBOX, index them, settle `\\Recent`; add the big message. Its size in bytes."""
    uid, gid = (5000, 5000) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    started = time.perf_counter()
    write_maildir(str(dovecot.maildir(USER)), generate(count, seed=1), uid, gid)
    dovecot.doveadm("index", "-u", USER, "INBOX")
    client = raw_client(dovecot)
    client.select_folder("INBOX")  # read-write once, as any mail client would: clears \Recent for every session
    client.create_folder("Big")
    big = big_message()
    client.append("Big", big, msg_time=dt.datetime.now(dt.UTC))
    client.logout()
    elapsed = time.perf_counter() - started
    print(f"populated {count} messages + one {len(big) / 1e6:.0f} MB message in {elapsed:.1f} s", file=sys.stderr)
    return len(big)


class Raw:
    """One warm connection with INBOX examined and kept selected, sending the minimal commands."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.client = raw_client(dovecot)
        self.client.select_folder("INBOX", readonly=True)
        newest = self.client.sort(["REVERSE", "ARRIVAL"], ["ALL"])[:50]
        structures = self.client.fetch(newest, ["BODYSTRUCTURE"])
        #: the newest multipart/alternative message; its text/plain part is part 1
        self.read_uid: int = next(u for u in newest if structures[u][b"BODYSTRUCTURE"].is_multipart)

    def page(self, criteria: list[Any]) -> list[int]:
        """`UID SORT (REVERSE ARRIVAL) UTF-8 <criteria>` + `UID FETCH` of the newest 20, the items imap-mcp fetches."""
        uids = self.client.sort(["REVERSE", "ARRIVAL"], criteria, "UTF-8")
        self.client.fetch(uids[:20], list(SUMMARY_ITEMS))
        return list(uids[:20])

    def read(self) -> None:
        """What get_message needs: flags, structure and headers, then the text part."""
        self.client.fetch([self.read_uid], READ_HEAD)
        self.client.fetch([self.read_uid], ["BODY.PEEK[1]"])

    async def call(self, operation: str) -> float:
        start = time.perf_counter()
        if operation == "get_message":
            self.read()
        else:
            self.page(CRITERIA[operation.removesuffix(CHANGED)])
        return (time.perf_counter() - start) * 1000


class Toucher:
    """Another mail client that flips \\Flagged on the oldest message: INBOX's HIGHESTMODSEQ grows."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.client = raw_client(dovecot)
        self.client.select_folder("INBOX")
        self.uid = min(self.client.search(["ALL"]))
        self.flagged = False

    def touch(self) -> None:
        change = self.client.remove_flags if self.flagged else self.client.add_flags
        change([self.uid], [b"\\Flagged"])
        self.flagged = not self.flagged


def server_params(dovecot: Dovecot) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMAP_")}
    env.update(
        IMAP_HOST="127.0.0.1",
        IMAP_PORT=str(dovecot.tls_port),
        IMAP_USERNAME=USER,
        IMAP_PASSWORD=PASSWORD,
        IMAP_TLS="implicit",
        IMAP_CA_FILE=str(dovecot.cert_file),
    )
    return StdioServerParameters(command=sys.executable, args=["-m", "imap_mcp.server", "stdio"], env=env)


@dataclass
class Mine:
    """A running `imap-mcp stdio`, driven by the SDK client."""

    client: Client
    read_uid: int

    def arguments(self, operation: str) -> tuple[str, dict[str, Any]]:
        operation = operation.removesuffix(CHANGED)
        if operation == "get_message":
            return "get_message", {"mailbox": "INBOX", "uid": self.read_uid}
        return "search_messages", {"from": SENDER} if operation == "filtered search" else {}

    async def result(self, operation: str) -> Any:
        tool, arguments = self.arguments(operation)
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        return result.structured_content

    async def call(self, operation: str) -> float:
        start = time.perf_counter()
        await self.result(operation)
        return (time.perf_counter() - start) * 1000


class Peer:
    """mcp-email-server 1.13.3 in its own virtualenv, behind `peer_driver.py` (one call per request)."""

    def __init__(self, dovecot: Dovecot, read_uid: int, workdir: Path, projection: bool) -> None:
        (workdir / "home").mkdir(parents=True)  # the peer creates cfg/ itself, private, as it insists
        env = {
            **os.environ,
            "MCP_EMAIL_SERVER_ACCOUNT_NAME": "default",
            "MCP_EMAIL_SERVER_EMAIL_ADDRESS": "alice@example.com",
            "MCP_EMAIL_SERVER_USER_NAME": USER,
            "MCP_EMAIL_SERVER_PASSWORD": PASSWORD,
            "MCP_EMAIL_SERVER_IMAP_HOST": "127.0.0.1",
            "MCP_EMAIL_SERVER_IMAP_PORT": str(dovecot.tls_port),
            "MCP_EMAIL_SERVER_IMAP_SSL": "true",
            "MCP_EMAIL_SERVER_IMAP_VERIFY_SSL": "true",
            "SSL_CERT_FILE": str(dovecot.cert_file),
            "MCP_EMAIL_SERVER_CONFIG_PATH": str(workdir / "cfg" / "config.toml"),
            "HOME": str(workdir / "home"),
        }
        if projection:
            env["MCP_EMAIL_SERVER_METADATA_SNAPSHOT_ROWS"] = PROJECTION_ROWS
        self.process = subprocess.Popen(
            [str(PEER_PYTHON), str(HERE / "peer_driver.py"), str(read_uid), SENDER, str(workdir / "server.log")],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._answer()  # {"ready": true}
        self.answers: dict[str, list[dict[str, Any]]] = {}

    def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"peer_driver.py exited with {self.process.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def request(self, operation: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(operation.removesuffix(CHANGED) + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        self.answers.setdefault(operation, []).append(answer)
        return answer

    async def call(self, operation: str) -> float:
        answer = await anyio.to_thread.run_sync(self.request, operation)
        return float(answer["ms"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


Side = Callable[[str], Awaitable[float]]


async def rounds(
    operation: str, sides: Mapping[str, Side], runs: int, before_each: Callable[[], None] | None = None
) -> dict[str, list[float]]:
    """One unmeasured warm-up call per side, then `runs` rounds of one call per side.

    Raw and imap-mcp swap which goes first every round; a third side (the peer) goes last.
    `before_each` (unmeasured) runs before every call.
    """
    prepare = before_each or (lambda: None)
    for call in sides.values():
        prepare()
        await call(operation)
    names = list(sides)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(runs):
        order = names if round_ % 2 == 0 else [names[1], names[0], *names[2:]]
        for name in order:
            prepare()
            times[name].append(await sides[name](operation))
    return times


async def check_same_page(raw: Raw, mine: Mine, operation: str) -> int:
    """Both sides return the same 20 UIDs; the exact total imap-mcp reports."""
    page = await mine.result(operation)
    assert [m["uid"] for m in page["messages"]] == raw.page(CRITERIA[operation]), operation
    return int(page["total"])


async def measure(
    dovecot: Dovecot, raw: Raw, peer: Peer | None, runs: int
) -> tuple[dict[str, dict[str, list[float]]], dict[str, int]]:
    async with Client(server_params(dovecot), mode="2026-07-28") as client:
        await client.list_tools()
        mine = Mine(client, raw.read_uid)
        totals = {operation: await check_same_page(raw, mine, operation) for operation in CRITERIA}
        sides: dict[str, Side] = {RAW: raw.call, MINE: mine.call}
        if peer is not None:
            sides[PEER] = peer.call
        toucher = Toucher(dovecot)
        try:
            measured = {
                operation: await rounds(operation, sides, runs, toucher.touch if CHANGED in operation else None)
                for operation in OPERATIONS
            }
        finally:
            toucher.client.logout()
        return measured, totals


async def fresh_processes(dovecot: Dovecot, read_uid: int, processes: int) -> dict[str, list[tuple[float, float]]]:
    """Per operation, (first, second) call of each of `processes` fresh imap-mcp processes, after tools/list."""
    found: dict[str, list[tuple[float, float]]] = {}
    for operation in ("search page 1", "get_message"):
        for _ in range(processes):
            async with Client(server_params(dovecot), mode="2026-07-28") as client:
                await client.list_tools()
                mine = Mine(client, read_uid)
                first = await mine.call(operation)
                found.setdefault(operation, []).append((first, await mine.call(operation)))
    return found


@dataclass
class Projection:
    build: dict[str, Any]
    times: dict[str, list[float]]


async def projection(dovecot: Dovecot, raw: Raw, runs: int, workdir: Path) -> Projection:
    """mcp-email-server with its SQLite projection: the building call, then warm page-1 rounds."""
    peer = Peer(dovecot, raw.read_uid, workdir, projection=True)
    try:
        build = await anyio.to_thread.run_sync(peer.request, "search page 1")
        async with Client(server_params(dovecot), mode="2026-07-28") as client:
            await client.list_tools()
            sides: dict[str, Side] = {RAW: raw.call, MINE: Mine(client, raw.read_uid).call, PEER: peer.call}
            times = await rounds("search page 1", sides, runs)
        return Projection(build, times)
    finally:
        peer.close()


def memory_growth_mb(dovecot: Dovecot, max_chars: int) -> float:
    pool = ImapPool(ImapSettings("127.0.0.1", dovecot.tls_port, USER, Secret(PASSWORD), "implicit", dovecot.cert_file))
    target = MessageSelection("Big", None, (1,))
    operation = InMailbox("Big", lambda client, examined: read_message(client, examined, target, max_chars))
    pool.run_sync(operation)  # warm: connection, EXAMINE, imports
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    pool.run_sync(operation)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    pool.close_all()
    return (peak - baseline) / 1e6


def ratio(numerator: list[float], denominator: list[float]) -> str:
    """Median and range of the per-round ratios."""
    ratios = [a / b for a, b in zip(numerator, denominator, strict=True)]
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def peer_cells(peer: Peer | None, operation: str, times: dict[str, list[float]]) -> tuple[str, str]:
    if peer is None:
        return "not run", "not run"
    median = f"{statistics.median(times[PEER]):,.1f}"
    errors = [a for a in peer.answers[operation][1:] if a["error"]]
    if errors:
        return f"error after {median}: `{errors[0]['text'][:120]}`", "cannot answer"
    return median, ratio(times[PEER], times[MINE])


def report(
    args: argparse.Namespace,
    main_rounds: dict[str, dict[str, list[float]]],
    totals: dict[str, int],
    peer: Peer | None,
    fresh: dict[str, list[tuple[float, float]]],
    projected: Projection | None,
    memory: dict[int, float],
    big_bytes: int,
) -> str:
    lines = [
        f"Measured {dt.date.today().isoformat()}: {args.count:,} messages in INBOX (totals reported by imap-mcp: "
        f"{totals['search page 1']:,} and {totals['filtered search']:,} from {SENDER}), Dovecot on loopback over "
        f"implicit TLS. {args.runs} interleaved rounds per operation after one unmeasured warm-up call per side; "
        "medians in ms; ratios are the median (min-max) of the per-round ratios.",
        "",
        f"| operation | {RAW} | {MINE} | {PEER} 1.13.3, stock | imap-mcp / raw | mcp-email-server / imap-mcp |",
        "|---|---|---|---|---|---|",
    ]
    for operation, times in main_rounds.items():
        peer_median, peer_ratio = peer_cells(peer, operation, times)
        lines.append(
            f"| {operation} | {statistics.median(times[RAW]):,.1f} | {statistics.median(times[MINE]):,.1f} "
            f"| {peer_median} | {ratio(times[MINE], times[RAW])} | {peer_ratio} |"
        )
    lines += [
        "",
        f"| fresh imap-mcp process, median of {args.processes} (after tools/list) | first call | second call "
        "| second / first |",
        "|---|---|---|---|",
    ]
    for operation, pairs in fresh.items():
        firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
        lines.append(
            f"| {operation} | {statistics.median(firsts):,.1f} | {statistics.median(seconds):,.1f} "
            f"| {ratio(seconds, firsts)} |"
        )
    if projected is not None:
        build, times = projected.build, projected.times
        outcome = f"error: `{build['text'][:120]}`" if build["error"] else "answered"
        lines += [
            "",
            f"| {PEER} 1.13.3 with MCP_EMAIL_SERVER_METADATA_SNAPSHOT_ROWS={PROJECTION_ROWS} | |",
            "|---|---|",
            f"| building the projection (first page-1 call of a fresh process) | {build['ms'] / 1000:,.1f} s, "
            f"{outcome}, peak RSS {build['VmHWM']:,.0f} MiB |",
            "",
            f"| search page 1, {args.runs} interleaved rounds, projection built (ms) | {RAW} | {MINE} "
            f"| {PEER} (projection) | imap-mcp / raw | mcp-email-server / imap-mcp |",
            "|---|---|---|---|---|---|",
            f"| search page 1 | {statistics.median(times[RAW]):,.1f} | {statistics.median(times[MINE]):,.1f} "
            f"| {statistics.median(times[PEER]):,.1f} (range {min(times[PEER]):,.0f}-{max(times[PEER]):,.0f}) "
            f"| {ratio(times[MINE], times[RAW])} | {ratio(times[PEER], times[MINE])} |",
        ]
    lines += [
        "",
        f"| get_message on the {big_bytes / 1e6:.1f} MB message (30 MB text, 15 MB attachment) "
        "| peak Python memory growth |",
        "|---|---|",
        *(f"| max_chars={chars:,} | {mb:.2f} MB |" for chars, mb in memory.items()),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=9, help="interleaved rounds per operation")
    parser.add_argument("--processes", type=int, default=3, help="fresh imap-mcp processes for first vs second call")
    parser.add_argument(
        "--peer-projection",
        action="store_true",
        help=f"also run mcp-email-server with MCP_EMAIL_SERVER_METADATA_SNAPSHOT_ROWS={PROJECTION_ROWS} "
        "(builds its projection once: about 5 minutes and 3.5 GiB)",
    )
    args = parser.parse_args()
    if args.peer_projection and not PEER_PYTHON.exists():
        parser.error(f"--peer-projection needs {PEER_PYTHON}; see bench/README.md")
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    dovecot = Dovecot(users={USER: PASSWORD}, extra_config=[CACHE_FIELDS], base=base)
    dovecot.start()
    try:
        big_bytes = populate(dovecot, args.count)
        raw = Raw(dovecot)
        peer = Peer(dovecot, raw.read_uid, dovecot.dir / "peer", projection=False) if PEER_PYTHON.exists() else None
        try:
            main_rounds, totals = anyio.run(measure, dovecot, raw, peer, args.runs)
        finally:
            if peer is not None:
                peer.close()
        fresh = anyio.run(fresh_processes, dovecot, raw.read_uid, args.processes)
        projected = None
        if args.peer_projection:
            projected = anyio.run(projection, dovecot, raw, args.runs, dovecot.dir / "peer-projection")
        raw.client.logout()
        memory = {chars: memory_growth_mb(dovecot, chars) for chars in (20_000, 200_000)}
        print(report(args, main_rounds, totals, peer, fresh, projected, memory, big_bytes))
    finally:
        dovecot.stop()


if __name__ == "__main__":
    main()
