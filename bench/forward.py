"""Forwarding a message with a 20 MB attachment: imap-mcp's forward_message against raw imapclient + smtplib.

Not part of the test run. Starts a private Dovecot and an SMTP sink in a subprocess of its own (so the bytes it
receives are not counted in this process's memory; it checks each message's size and that the attachment's SHA-256
is in it), appends one message with a 20 MB random attachment (27 MB as base64), then measures in interleaved rounds:

- **raw**: one warm imapclient connection with INBOX selected; `UID FETCH BODY.PEEK[]` of the message, then a fresh
  `smtplib.SMTP` connection and `sendmail` of those bytes, as they are, to one recipient.
- **imap-mcp**: `forward_message` through the SDK `Client` against an in-process server on a warm pool, a person
  approving in a pushed dialog (one call: the original is read once), `save_to_sent: false` (raw files no copy);
  mode `attachment` (the original as message/rfc822) and mode `inline` (its text quoted, the attachment re-encoded).

Time: interleaved rounds, no tracing. Memory: Python's traced peak (tracemalloc) during one more call of each side,
less what was allocated before it (tracing slows Python code down, so those calls are not timed).

    .venv/bin/python bench/forward.py [--mib 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import smtplib
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import anyio
from imapclient import IMAPClient
from mcp import Client
from mcp.types import ElicitRequestParams, ElicitResult

from imap_mcp.server.demo.dovecot import Dovecot, free_port

USER, PASSWORD = "bench", "bench-pw"
SINK = """
import email, email.policy, hashlib, sys
from aiosmtpd.controller import Controller
port, log, wanted = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class Sink:
    async def handle_DATA(self, server, session, envelope):
        raw = envelope.original_content or envelope.content
        message = email.message_from_bytes(raw, policy=email.policy.default)
        found = [hashlib.sha256(part.get_payload(decode=True)).hexdigest()
                 for part in message.walk() if part.get_filename() == "footage.mp4"]
        with open(log, "a") as out:
            out.write(f"{len(raw)} {int(found == [wanted])}\\n")
        return "250 OK"
controller = Controller(Sink(), hostname="127.0.0.1", port=port, decode_data=False, data_size_limit=None)
controller.start()
print("ready", flush=True)
sys.stdin.read()
controller.stop()
"""


def big_message(size: int) -> tuple[bytes, str]:
    """A message with a `size`-byte random attachment (footage.mp4), and the attachment's SHA-256."""
    data = os.urandom(size)
    message = EmailMessage()
    message["From"] = "Zoe <zoe@example.com>"
    message["To"] = f"{USER}@example.org"
    message["Subject"] = "The raw footage"
    message.set_content("The footage is attached.\n")
    message.add_attachment(data, maintype="video", subtype="mp4", filename="footage.mp4")
    return message.as_bytes(policy=message.policy.clone(linesep="\r\n")), hashlib.sha256(data).hexdigest()


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def peak(call: Callable[[], Awaitable[Any]]) -> float:
    """Python's traced peak during one call, in MiB above what was allocated before it (tracemalloc slows Python
    code down, so memory is measured in calls of its own, never timed)."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    await call()
    highest = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (highest - before) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=20, help="attachment size in MiB")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="bench-state.")
    raw_message, digest = big_message(args.mib * 2**20)
    log = Path(tempfile.mkdtemp(prefix="bench-sink.")) / "received"
    port = free_port()
    sink = subprocess.Popen(
        [sys.executable, "-c", SINK, str(port), str(log), digest],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert sink.stdout is not None and sink.stdout.readline().strip() == b"ready"
    try:
        with Dovecot(users={USER: PASSWORD}, base=Path("/dev/shm") if Path("/dev/shm").is_dir() else None) as dovecot:
            anyio.run(run, dovecot, port, raw_message, args, log)
    finally:
        assert sink.stdin is not None
        sink.stdin.close()
        sink.wait(10)


async def run(dovecot: Dovecot, smtp_port: int, raw_message: bytes, args: argparse.Namespace, log: Path) -> None:
    from imap_mcp.server.config import load_settings
    from imap_mcp.server.serving.app import build_server

    imap = IMAPClient("127.0.0.1", dovecot.port, ssl=False)
    imap.login(USER, PASSWORD)
    imap.append("INBOX", raw_message)
    uidvalidity = int(imap.select_folder("INBOX")[b"UIDVALIDITY"])
    uid = max(imap.search(["ALL"]))
    from imap_mcp.server.imap.message_ids import MessageRef

    message_id = MessageRef("INBOX", uidvalidity, uid).id
    del raw_message

    def raw_forward() -> None:
        fetched = imap.fetch([uid], ["BODY.PEEK[]"])[uid][b"BODY[]"]
        with smtplib.SMTP("127.0.0.1", smtp_port) as smtp:
            smtp.sendmail("bench@example.org", ["alice@example.com"], fetched)

    async def approve(context: object, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"approve": True})

    env = {
        "IMAP_HOST": "127.0.0.1", "IMAP_PORT": str(dovecot.port), "IMAP_TLS": "none", "IMAP_USERNAME": USER,
        "IMAP_PASSWORD": PASSWORD, "SMTP_HOST": "127.0.0.1", "SMTP_PORT": str(smtp_port), "SMTP_TLS": "none",
        "SMTP_FROM": "bench@example.org", "SMTP_MAX_MESSAGE_BYTES": str(64 * 2**20),
    }  # fmt: skip
    sides: dict[str, Callable[[], Awaitable[Any]]] = {"raw": lambda: anyio.to_thread.run_sync(raw_forward)}
    async with Client(build_server(load_settings(env)), mode="legacy", elicitation_callback=approve) as client:
        for mode in ("attachment", "inline"):
            arguments = {"id": message_id, "to": ["alice@example.com"], "mode": mode, "save_to_sent": False}

            async def forward(arguments: dict[str, Any] = arguments) -> None:
                result = await client.call_tool("forward_message", arguments)
                assert not result.is_error and result.structured_content["status"] == "sent", result.content

            sides[mode] = forward
        seconds: dict[str, list[float]] = {name: [] for name in sides}
        for side in sides.values():  # warm-up: connections, imports
            await side()
        order = list(sides)
        for round_ in range(args.runs):
            for name in order if round_ % 2 == 0 else reversed(order):
                seconds[name].append(await timed(sides[name]))
        peaks = {name: await peak(side) for name, side in sides.items()}
    imap.logout()
    received = [line.split() for line in log.read_text().splitlines()]
    assert all(found == "1" for _, found in received), "an attachment did not arrive byte for byte"
    size = args.mib
    print(f"Forwarding a message with a {size} MiB attachment ({args.runs} interleaved rounds, median; memory: "
          f"Python's traced peak during one more call, not timed)\n")  # fmt: skip
    print("| side | seconds | / raw, per round | peak MiB | peak / attachment |")
    print("|---|---|---|---|---|")
    for name, values in seconds.items():
        ratios = [value / raw for value, raw in zip(values, seconds["raw"], strict=True)]
        label = "raw imapclient fetch + smtplib sendmail" if name == "raw" else f"imap-mcp forward_message, {name}"
        print(
            f"| {label} | {statistics.median(values):.2f} | {statistics.median(ratios):.2f} "
            f"({min(ratios):.2f}-{max(ratios):.2f}) | {peaks[name]:.1f} | {peaks[name] / size:.2f} |"
        )
    print(f"\n{len(received)} messages received, each with the attachment's SHA-256 as sent.")


if __name__ == "__main__":
    main()
