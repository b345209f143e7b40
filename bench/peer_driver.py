"""Drive mcp-email-server over stdio with its own (mcp 1.x) client; run with the peer's virtualenv python.

Prints JSON: per operation, the milliseconds of each call and whether it returned an error.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(runs: int, read_uid: str, sender: str) -> None:
    server = StdioServerParameters(
        command=os.path.join(os.path.dirname(sys.executable), "mcp-email-server"), args=["stdio"], env=dict(os.environ)
    )
    calls = {
        "search page 1": (
            "list_emails_metadata",
            {"account_name": "default", "page": 1, "page_size": 20, "order": "desc", "mailbox": "INBOX"},
        ),
        "filtered search": (
            "list_emails_metadata",
            {
                "account_name": "default",
                "page": 1,
                "page_size": 20,
                "order": "desc",
                "mailbox": "INBOX",
                "from_address": sender,
            },
        ),
        "get_message": ("get_emails_content", {"account_name": "default", "email_ids": [read_uid]}),
    }
    out: dict[str, dict[str, list[float] | bool]] = {}
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            for name, (tool, arguments) in calls.items():
                times, error = [], False
                for _ in range(runs):
                    start = time.perf_counter()
                    result = await session.call_tool(tool, arguments)
                    times.append((time.perf_counter() - start) * 1000)
                    error = error or bool(result.isError)
                out[name] = {"ms": times, "error": error}
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
