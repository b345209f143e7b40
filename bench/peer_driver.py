"""Drive mcp-email-server over stdio with its own (mcp 1.x) client; run with the peer's virtualenv python.

    peer_driver.py READ_UID SENDER SERVER_LOG

Starts one server process (configured by the environment it is given), does `initialize` and
`tools/list`, prints `{"ready": true}`, then reads one operation name per line from stdin
("search page 1", "filtered search", "get_message") and answers each with one JSON line: the
milliseconds of that call, whether it returned an error (with the start of its text), and the
server's peak and current RSS so far. The caller can so interleave the peer's calls with its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def calls(read_uid: str, sender: str) -> dict[str, tuple[str, dict[str, object]]]:
    page = {"account_name": "default", "page": 1, "page_size": 20, "order": "desc", "mailbox": "INBOX"}
    return {
        "search page 1": ("list_emails_metadata", page),
        "filtered search": ("list_emails_metadata", {**page, "from_address": sender}),
        "get_message": ("get_emails_content", {"account_name": "default", "email_ids": [read_uid]}),
    }


def memory_mib() -> dict[str, float]:
    """VmHWM and VmRSS of the server, this process's only child (stdio_client spawns it directly)."""
    children = " ".join(path.read_text() for path in Path(f"/proc/{os.getpid()}/task").glob("*/children")).split()
    found: dict[str, float] = {}
    for line in Path(f"/proc/{children[0]}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            found[key] = int(value.split()[0]) / 1024
    return found


async def main(read_uid: str, sender: str, server_log: str) -> None:
    server = StdioServerParameters(
        command=os.path.join(os.path.dirname(sys.executable), "mcp-email-server"), args=["stdio"], env=dict(os.environ)
    )
    known = calls(read_uid, sender)
    with open(server_log, "w") as log:
        async with stdio_client(server, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            print(json.dumps({"ready": True}), flush=True)
            while name := (await asyncio.to_thread(sys.stdin.readline)).strip():
                tool, arguments = known[name]
                start = time.perf_counter()
                result = await session.call_tool(tool, arguments)
                ms = (time.perf_counter() - start) * 1000
                text = " ".join(getattr(item, "text", "") for item in result.content)
                error = bool(result.isError)  # type: ignore[attr-defined]  # mcp 1.x, the peer's, spells it so
                answer = {"ms": ms, "error": error, "text": text[:300] if error else "", **memory_mib()}
                print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
