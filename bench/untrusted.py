"""Issue #29's cost, side by side: the fenced and judged reading tools against the code before them, in one run.

    git worktree add /tmp/imap-mcp-base 8ad4297          # the commit before issue #29
    python3 -m venv bench/.venv-base && bench/.venv-base/bin/pip install /tmp/imap-mcp-base
    .venv/bin/python bench/untrusted.py [--count 100000] [--runs 9] [--base-python bench/.venv-base/bin/python]

Starts a private Dovecot (on /dev/shm when there is one), writes `--count` messages into INBOX as
`run.py` does (`populate`), then appends a 100 KB HTML newsletter (tables, inline styles, a hidden
preheader, tracking links, remote images and a tracking pixel) as the newest message. Two
`imap-mcp stdio` processes serve the same account, both with `IMAP_TRUSTED_AUTHSERV_ID` set: the
base (the installed old wheel, `--base-python`) and this checkout. For each operation every side
makes one unmeasured warm-up call, then `--runs` rounds follow, one call per side, the order swapped
every round; the table gives each side's median and the median (min-max) of the per-round ratios.

- get_message of the newsletter (default max_chars);
- search_messages page 1 (newest 20 + exact total) of the unchanged INBOX: the order and the page's
  summaries come from the caches, the flags from the server;
- the same with a flag flipped on the oldest message before every call (unmeasured), so each side
  sorts again;
- search_messages of a page never shown before (offset 20 x round), so every summary is fetched
  (ENVELOPE, BODYSTRUCTURE and now Authentication-Results) and judged.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from imap_mcp.server.demo.dovecot import Dovecot

sys.path.insert(0, str(Path(__file__).parent))
from run import CACHE_FIELDS, PASSWORD, USER, Toucher, populate, raw_client, rounds, server_params

HERE = Path(__file__).parent
BASE, NEW = "before (8ad4297)", "issue #29"
TRUSTED = "mx.bench.example"


def newsletter_html(target: int = 100_000) -> str:
    """About `target` characters of newsletter HTML, as mail marketing tools write it."""
    head = (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Weekly</title><style type="text/css">'
        "body{margin:0;padding:0} .preheader{display:none!important;max-height:0;overflow:hidden}"
        "@media only screen and (max-width:480px){ .desktop{display:none!important} .col{width:100%!important} }"
        '</style></head><body style="margin:0;background-color:#f4f4f4">'
        '<div class="preheader" style="display:none;font-size:1px;color:#f4f4f4">This week: rakes, hoes and more'
        "&zwnj;&nbsp;&zwnj;&nbsp;</div>"
        '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" bgcolor="#f4f4f4"><tr>'
        '<td align="center"><table class="container" width="600" style="background-color:#ffffff"><tr>'
        '<td style="padding:20px"><img src="https://cdn.shop.example/logo.png" width="200" height="50" alt="Shop">'
        "</td></tr>"
    )
    item = (
        '<tr><td class="col" style="padding:10px 20px;font-family:Arial,sans-serif;font-size:14px;color:#333333">'
        '<h2 style="margin:0;font-size:20px;color:#111111">Product {n}: garden tool of the week</h2>'
        '<p style="margin:8px 0">Our <strong>best-selling</strong> item number {n} is back in stock, now '
        "<em>30% off</em> for members. Free shipping on orders over 50&nbsp;EUR.</p>"
        '<a href="https://click.mailer.example/ls/click?upn=abc{n}def&amp;u=12345" style="color:#1a73e8">Shop now</a>'
        '<img src="https://cdn.shop.example/p/{n}.jpg" width="560" alt="Product {n}">'
        '<table width="100%"><tr><td>Price</td><td>{n}.99 EUR</td></tr></table></td></tr>'
    )
    tail = (
        '<tr><td style="padding:20px;font-size:11px;color:#999999">You receive this mail because you subscribed. '
        '<a href="https://shop.example/unsubscribe?u=1">Unsubscribe</a> | www.shop.example</td></tr>'
        '</table></td></tr></table><img src="https://t.mailer.example/open.gif?u=1" width="1" height="1" alt="">'
        "</body></html>"
    )
    parts, n = [head], 0
    while sum(map(len, parts)) + len(tail) < target:
        n += 1
        parts.append(item.format(n=n))
    return "".join([*parts, tail])


def append_newsletter(dovecot: Dovecot) -> int:
    """The newsletter as the newest INBOX message, under a trusted Authentication-Results header; its UID."""
    message = EmailMessage()
    message["From"] = "Shop News <news@shop.example>"
    message["To"] = f"{USER}@example.org"
    message["Subject"] = "Your weekly garden deals"
    message.set_content(newsletter_html(), subtype="html")
    verdicts = (
        f"Authentication-Results: {TRUSTED}; spf=pass smtp.mailfrom=bounce@shop.example; "
        "dkim=pass header.d=shop.example; dmarc=pass header.from=shop.example\r\n"
    )
    client = raw_client(dovecot)
    try:
        answer = client.append("INBOX", verdicts.encode() + message.as_bytes(), msg_time=dt.datetime.now(dt.UTC))
    finally:
        client.logout()
    return int(answer.split(b"]")[0].split()[-1])


def params(dovecot: Dovecot, python: str) -> StdioServerParameters:
    found = server_params(dovecot)
    return StdioServerParameters(
        command=python, args=found.args, env={**(found.env or {}), "IMAP_TRUSTED_AUTHSERV_ID": TRUSTED}
    )


OPERATIONS = ("get_message (100 KB HTML newsletter)", "search page 1", "search page 1, changed", "search, new page")


class Side:
    """One `imap-mcp stdio` process, driven by the SDK client."""

    def __init__(self, client: Client, newsletter: int) -> None:
        self.client = client
        self.newsletter = newsletter
        self.pages = 0

    def arguments(self, operation: str) -> tuple[str, dict[str, Any]]:
        if operation.startswith("get_message"):
            return "get_message", {"mailbox": "INBOX", "uid": self.newsletter}
        if operation == "search, new page":
            self.pages += 1
            return "search_messages", {"offset": 20 * self.pages}
        return "search_messages", {}

    async def result(self, operation: str) -> dict[str, Any]:
        tool, arguments = self.arguments(operation)
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        return result.structured_content or {}

    async def call(self, operation: str) -> float:
        start = time.perf_counter()
        await self.result(operation)
        return (time.perf_counter() - start) * 1000


async def measure(dovecot: Dovecot, base_python: str, newsletter: int, runs: int) -> dict[str, dict[str, list[float]]]:
    async with (
        Client(params(dovecot, base_python), mode="2026-07-28") as old,
        Client(params(dovecot, sys.executable), mode="2026-07-28") as new,
    ):
        sides = {BASE: Side(old, newsletter), NEW: Side(new, newsletter)}
        for side in sides.values():
            await side.client.list_tools()
        pages = [await side.result("search page 1") for side in sides.values()]
        assert [m["uid"] for m in pages[0]["messages"]] == [m["uid"] for m in pages[1]["messages"]]
        message = await sides[NEW].result(OPERATIONS[0])
        assert message["authentication"]["trusted"] and message["removed"]["hidden_html"] >= 1, message["removed"]
        toucher = Toucher(dovecot)
        found: dict[str, dict[str, list[float]]] = {}
        try:
            for operation in OPERATIONS:
                before: Callable[[], None] | None = toucher.touch if operation.endswith("changed") else None
                calls = {name: side.call for name, side in sides.items()}
                found[operation] = await rounds(operation, calls, runs, before)
        finally:
            toucher.client.logout()
        return found


def report(found: dict[str, dict[str, list[float]]], runs: int, count: int) -> str:
    lines = [
        f"| operation ({count:,} messages in INBOX; {runs} interleaved rounds; median ms) | {BASE} | {NEW} "
        f"| {NEW} / before, per round |",
        "|---|---|---|---|",
    ]
    for operation, times in found.items():
        ratios = [new / old for new, old in zip(times[NEW], times[BASE], strict=True)]
        lines.append(
            f"| {operation} | {statistics.median(times[BASE]):.1f} | {statistics.median(times[NEW]):.1f} "
            f"| **{statistics.median(ratios):.2f}x** ({min(ratios):.2f}-{max(ratios):.2f}) |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=9, help="interleaved rounds per operation")
    parser.add_argument("--base-python", default=str(HERE / ".venv-base" / "bin" / "python"))
    args = parser.parse_args()
    if not Path(args.base_python).exists():
        parser.error(f"{args.base_python} does not exist: install the base commit there (see the docstring)")
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    dovecot = Dovecot(users={USER: PASSWORD}, extra_config=[CACHE_FIELDS], base=shm)
    dovecot.start()
    try:
        populate(dovecot, args.count)
        newsletter = append_newsletter(dovecot)
        found = anyio.run(measure, dovecot, args.base_python, newsletter, args.runs)
        print(report(found, args.runs, args.count + 1))
    finally:
        dovecot.stop()


if __name__ == "__main__":
    main()
