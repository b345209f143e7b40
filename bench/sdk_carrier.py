"""The SDK alone carrying imap-mcp's results: the baseline for what imap-mcp adds to a result it serves.

    python bench/sdk_carrier.py RESULTS.json     (an MCP server over stdio)

Two tools, `search_messages` (its one argument, `kind`, names which search's page) and `get_message`,
with imap-mcp's output schemas (the same pydantic models, compacted the same way), each returning the
result RESULTS.json holds for it: structured content imap-mcp returned. No IMAP, none of imap-mcp's
code paths. A call costs what the SDK costs to carry that result both ways: the request, the tool
call, serialising the result (structured and as text), and the client validating it against the
output schema. `changing.py` times it beside the trivial call.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from imap_mcp.server.reading.reader import MessageContent
from imap_mcp.server.reading.search import SearchPage
from imap_mcp.server.tools.output_schemas import compact_output_schemas


def build(results: dict[str, Any]) -> MCPServer:
    mcp = MCPServer("sdk-carrier", log_level="WARNING")
    pages = {kind: SearchPage.model_validate(page) for kind, page in results["pages"].items()}
    message = MessageContent.model_validate(results["message"])

    @mcp.tool(name="search_messages")
    async def search_messages(kind: str) -> SearchPage:
        return pages[kind]

    @mcp.tool(name="get_message")
    async def get_message() -> MessageContent:
        return message

    compact_output_schemas(mcp)
    return mcp


if __name__ == "__main__":
    build(json.loads(Path(sys.argv[1]).read_text())).run("stdio")
