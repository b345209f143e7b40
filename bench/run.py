"""One benchmark run: 100,000 messages in a private Dovecot, imap-mcp against raw imapclient and mcp-email-server.

    .venv/bin/python bench/run.py [--count 100000] [--runs 7]

Starts its own Dovecot (on /dev/shm when there is one) and stops it at the end. Populates INBOX by
writing Maildir files, then `doveadm index`. Measures search page 1 (newest 20 with the total), a
filtered search (FROM "Walter Rossi", ~0.85%) and reading one message, each as the median of
`--runs` warm calls: raw imapclient on a kept-selected connection doing the minimal commands,
imap-mcp over stdio (SDK client), and mcp-email-server 1.13.3 over stdio when `bench/.venv-peer`
has it. Also the first vs the second call of a fresh imap-mcp process, and the growth of Python's
peak memory while get_message reads a 50 MB message. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import anyio
from imap_mcp.server.config import ImapSettings, Secret
from imap_mcp.server.dovecot import Dovecot
from imap_mcp.server.imap_pool import ImapPool, InMailbox
from imap_mcp.server.message_lookup import Target
from imap_mcp.server.message_reader import read_message
from imapclient import IMAPClient
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))
from populate import generate, write_maildir

HERE = Path(__file__).parent
PEER_PYTHON = HERE / ".venv-peer" / "bin" / "python"
USER, PASSWORD = "alice", "alice-pw"
SENDER = "Walter Rossi"
CACHE_FIELDS = (
    "mail_always_cache_fields = flags date.received date.sent size.virtual hdr.from hdr.to hdr.cc hdr.subject "
    "hdr.date hdr.message-id hdr.in-reply-to hdr.references imap.bodystructure"
)
SUMMARY = ["UID", "FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODYSTRUCTURE"]


def median_ms(action: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def imap_settings(dovecot: Dovecot) -> ImapSettings:
    return ImapSettings("127.0.0.1", dovecot.tls_port, USER, Secret(PASSWORD), "implicit", dovecot.cert_file)


def raw_client(dovecot: Dovecot) -> IMAPClient:
    import ssl

    client = IMAPClient(
        "127.0.0.1", dovecot.tls_port, ssl_context=ssl.create_default_context(cafile=str(dovecot.cert_file))
    )
    client.login(USER, PASSWORD)
    return client


def populate(dovecot: Dovecot, count: int) -> None:
    uid, gid = (5000, 5000) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    started = time.perf_counter()
    write_maildir(str(dovecot.maildir(USER)), generate(count, seed=1), uid, gid)
    dovecot.doveadm("index", "-u", USER, "INBOX")
    client = raw_client(dovecot)
    client.select_folder("INBOX")  # read-write once, as any mail client would: clears \Recent
    client.create_folder("Big")
    client.append("Big", big_message(), msg_time=dt.datetime.now(dt.UTC))
    client.logout()
    print(f"populated {count} messages + one 50 MB message in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def big_message() -> bytes:
    """50 MB: a 30 MB text body (quoted-printable) and a 20 MB attachment."""
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


def raw_figures(dovecot: Dovecot, runs: int) -> tuple[dict[str, float], int]:
    client = raw_client(dovecot)
    client.select_folder("INBOX", readonly=True)
    newest = client.sort(["REVERSE", "ARRIVAL"], ["ALL"])[:50]
    structures = client.fetch(newest, ["BODYSTRUCTURE"])
    read_uid = next(u for u in newest if structures[u][b"BODYSTRUCTURE"].is_multipart)

    def page(criteria: list[Any]) -> None:
        uids = client.sort(["REVERSE", "ARRIVAL"], criteria)
        client.fetch(uids[:20], SUMMARY)

    figures = {
        "search page 1": median_ms(lambda: page(["ALL"]), runs),
        "filtered search": median_ms(lambda: page(["FROM", SENDER]), runs),
        "get_message": median_ms(lambda: client.fetch([read_uid], ["BODYSTRUCTURE", "BODY.PEEK[1]<0.20000>"]), runs),
    }
    client.logout()
    return figures, read_uid


def server_env(dovecot: Dovecot) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMAP_")}
    env.update(
        IMAP_HOST="127.0.0.1",
        IMAP_PORT=str(dovecot.tls_port),
        IMAP_USERNAME=USER,
        IMAP_PASSWORD=PASSWORD,
        IMAP_TLS="implicit",
        IMAP_CA_FILE=str(dovecot.cert_file),
    )
    return env


async def ours(dovecot: Dovecot, runs: int, read_uid: int) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "imap_mcp.server", "stdio"], env=server_env(dovecot)
    )
    calls = {
        "search page 1": ("search_messages", {}),
        "filtered search": ("search_messages", {"from": SENDER}),
        "get_message": ("get_message", {"mailbox": "INBOX", "uid": read_uid}),
    }
    figures: dict[str, Any] = {}
    async with Client(params, mode="2026-07-28") as client:
        await client.list_tools()
        for name, (tool, arguments) in calls.items():
            if name == "search page 1":
                start = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                figures["first call"] = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                await client.call_tool(tool, arguments)
                figures["second call"] = (time.perf_counter() - start) * 1000
                figures["total"] = result.structured_content["total"]  # type: ignore[index]
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                times.append((time.perf_counter() - start) * 1000)
                assert not result.is_error, result.content
            figures[name] = statistics.median(times)
    async with Client(params, mode="2026-07-28") as client:  # a fresh process whose first call reads a message
        await client.list_tools()
        tool, arguments = calls["get_message"]
        for key in ("first read", "second read"):
            start = time.perf_counter()
            await client.call_tool(tool, arguments)
            figures[key] = (time.perf_counter() - start) * 1000
    return figures


def memory_growth_mb(dovecot: Dovecot, max_chars: int) -> float:
    pool = ImapPool(imap_settings(dovecot))
    target = Target("Big", None, (1,))
    operation = InMailbox("Big", lambda client, examined: read_message(client, examined, target, max_chars))
    pool.run_sync(operation)  # warm: connection, EXAMINE, imports
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    pool.run_sync(operation)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    pool.close_all()
    return (peak - baseline) / 1e6


def peer_figures(dovecot: Dovecot, runs: int, read_uid: int, workdir: Path) -> dict[str, Any] | None:
    if not PEER_PYTHON.exists():
        return None
    (workdir / "home").mkdir(parents=True, exist_ok=True)
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
    done = subprocess.run(
        [str(PEER_PYTHON), str(HERE / "peer_driver.py"), str(runs), str(read_uid), SENDER],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return None
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: (statistics.median(v["ms"]), v["error"]) for name, v in raw.items()}


def table(
    raw: dict[str, float], mine: dict[str, Any], peer: dict[str, Any] | None, memory: dict[int, float], count: int
) -> str:
    lines = [
        f"Measured {dt.date.today().isoformat()}: {count:,} messages in INBOX (total reported: {mine['total']:,}), "
        "Dovecot on loopback over implicit TLS, medians of warm calls (ms).",
        "",
        "| operation | raw imapclient | imap-mcp | mcp-email-server 1.13.3 | imap-mcp / raw "
        "| mcp-email-server / imap-mcp |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("search page 1", "filtered search", "get_message"):
        peer_cell, speedup = "not run", "-"
        if peer is not None:
            peer_ms, error = peer[name]
            peer_cell = f"{peer_ms:,.1f}" + (" (error)" if error else "")
            speedup = f"{peer_ms / mine[name]:.1f}x" + (" (peer returned an error)" if error else "")
        ratio = mine[name] / raw[name]
        lines.append(f"| {name} | {raw[name]:,.1f} | {mine[name]:,.1f} | {peer_cell} | {ratio:.2f}x | {speedup} |")
    lines += [
        "",
        "| fresh imap-mcp process | first call (connect, TLS, LOGIN, EXAMINE, work) | second call | second / first |",
        "|---|---|---|---|",
        f"| search page 1 | {mine['first call']:,.1f} | {mine['second call']:,.1f} "
        f"| {mine['second call'] / mine['first call']:.2f}x |",
        f"| get_message | {mine['first read']:,.1f} | {mine['second read']:,.1f} "
        f"| {mine['second read'] / mine['first read']:.2f}x |",
        "",
        "| get_message on a 50 MB message (30 MB text body, 20 MB attachment) | peak Python memory growth |",
        "|---|---|",
    ]
    lines += [f"| max_chars={chars:,} | {mb:.2f} MB |" for chars, mb in memory.items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    dovecot = Dovecot(users={USER: PASSWORD}, extra_config=[CACHE_FIELDS], base=base)
    dovecot.start()
    try:
        populate(dovecot, args.count)
        raw, read_uid = raw_figures(dovecot, args.runs)
        mine = anyio.run(ours, dovecot, args.runs, read_uid)
        memory = {chars: memory_growth_mb(dovecot, chars) for chars in (20_000, 200_000)}
        peer = peer_figures(dovecot, args.runs, read_uid, dovecot.dir / "peer")
        print(table(raw, mine, peer, memory, args.count))
    finally:
        dovecot.stop()


if __name__ == "__main__":
    main()
