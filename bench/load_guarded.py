"""Load benchmark: guarded round trips through a load balancer in front of two replicas.

    .venv/bin/python bench/load_guarded.py [--messages 1000] [--clients 8]

Starts a private Dovecot, fills INBOX with `--messages` messages (each with a unique
Message-ID), two `imap-mcp serve` replicas sharing one seal key ring, and nginx round-robin in
front. Then `--clients` concurrent MCP clients (2026-07-28, elicitation declared, every dialog
answered yes) each delete their share of the messages one by one through the balancer — one
guarded round trip each: question, answer, execution, very likely on different replicas.
Afterwards a Message-ID census of every mailbox checks that nothing was lost or duplicated:
every message must be in Trash exactly once and INBOX empty. Prints p50/p99 latency per round
trip, throughput, errors and the census.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections import Counter
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import ElicitRequestParams, ElicitResult

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from harness import Account, http_server, new_account, start_dovecot  # noqa: E402
from load_balancer import round_robin  # noqa: E402

from imap_mcp.server.imap.message_ids import MessageRef  # noqa: E402

SEAL_KEYS = "bench-key-" + "x" * 40


async def say_yes(context: object, params: ElicitRequestParams) -> ElicitResult:
    """A person who ticks every box of the dialog and accepts."""
    schema = getattr(params, "requested_schema", None) or {}
    content: dict[str, Any] = {
        name: True for name, prop in schema.get("properties", {}).items() if prop.get("type") == "boolean"
    }
    return ElicitResult(action="accept", content=content)


def fill_inbox(account: Account, count: int) -> list[tuple[int, str]]:
    """Append `count` messages; returns (uid, Message-ID) pairs."""
    client = account.imap()
    try:
        for i in range(count):
            msg = EmailMessage()
            msg["From"] = "load@example.com"
            msg["To"] = "bench@example.org"
            msg["Subject"] = f"load {i}"
            msg["Message-ID"] = f"<load-{i}@bench.example>"
            msg.set_content(f"message {i}\n")
            client.append("INBOX", msg.as_bytes())
        client.select_folder("INBOX", readonly=True)
        found = client.fetch(client.search(["ALL"]), ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
        return [
            (uid, data[b"BODY[HEADER.FIELDS (MESSAGE-ID)]"].decode().split(":", 1)[1].strip())
            for uid, data in found.items()
        ]
    finally:
        client.logout()


def census(account: Account) -> dict[str, Counter[str]]:
    """Message-IDs per mailbox, counted."""
    client = account.imap()
    out: dict[str, Counter[str]] = {}
    try:
        for flags, _, name in client.list_folders():
            if b"\\Noselect" in flags:
                continue
            client.select_folder(name, readonly=True)
            uids = client.search(["ALL"])
            counter: Counter[str] = Counter()
            if uids:
                for data in client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]).values():
                    counter[data[b"BODY[HEADER.FIELDS (MESSAGE-ID)]"].decode().split(":", 1)[1].strip()] += 1
            out[name] = counter
    finally:
        client.logout()
    return out


async def run_load(url: str, refs: list[MessageRef], clients: int) -> tuple[list[float], list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    shares = [refs[i::clients] for i in range(clients)]

    async def worker(share: list[MessageRef]) -> None:
        async with Client(url, mode="2026-07-28", elicitation_callback=say_yes) as client:
            for ref in share:
                started = time.perf_counter()
                try:
                    result = await client.call_tool("delete_messages", {"ids": [ref.id]})
                    if result.is_error:
                        errors.append(str(result.content[0])[:200])
                except Exception as exc:  # a protocol error counts as an error of the run
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
                latencies.append(time.perf_counter() - started)

    async with anyio.create_task_group() as group:
        for share in shares:
            group.start_soon(worker, share)
    return latencies, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()

    dovecot = start_dovecot()
    try:
        account = new_account(dovecot)
        pairs = fill_inbox(account, args.messages)
        client = account.imap()
        uidvalidity = client.select_folder("INBOX", readonly=True)[b"UIDVALIDITY"]
        client.logout()
        refs = [MessageRef("INBOX", uidvalidity, uid) for uid, _ in pairs]
        env = account.env(IMAP_MCP_SEAL_KEYS=SEAL_KEYS)
        with contextlib.ExitStack() as stack:
            url_a = stack.enter_context(http_server(env))
            url_b = stack.enter_context(http_server(env))
            ports = [int(u.rsplit(":", 1)[1].split("/")[0]) for u in (url_a, url_b)]
            port, access_log = stack.enter_context(round_robin(ports))
            started = time.perf_counter()
            latencies, errors = anyio.run(run_load, f"http://127.0.0.1:{port}/mcp", refs, args.clients)
            elapsed = time.perf_counter() - started
            upstream_hits = Counter(line.split()[0] for line in access_log.read_text().splitlines() if line)
        counts = census(account)
    finally:
        dovecot.stop()

    expected = {mid for _, mid in pairs}
    in_trash = counts.get("Trash", Counter())
    lost = expected - set(in_trash)
    duplicated = [mid for mid, n in in_trash.items() if n > 1]
    left_in_inbox = sum(counts.get("INBOX", Counter()).values())
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(f"guarded round trips through nginx → 2 replicas ({args.clients} concurrent clients)")
    print(
        "| round trips | errors | p50 ms | p99 ms | round trips/s | lost | duplicated | left in INBOX "
        "| requests per replica |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {len(latencies)} | {len(errors)} | {statistics.median(ordered) * 1000:.0f} | {p99 * 1000:.0f} | "
        f"{len(latencies) / elapsed:.1f} | {len(lost)} | {len(duplicated)} | {left_in_inbox} | "
        f"{' / '.join(str(n) for n in upstream_hits.values())} |"
    )
    for error in errors[:5]:
        print("error:", error)
    if errors or lost or duplicated or left_in_inbox:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
