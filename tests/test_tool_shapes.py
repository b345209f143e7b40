"""A server built after another reuses each tool's shape (`tool_shapes`) yet offers exactly the same tools, each
calling its own server's function: built per account, a server never runs another account's tool."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Account, served, structured

from imap_mcp.server.serving.app import build_server
from imap_mcp.server.tools import shapes as tool_shapes

pytestmark = pytest.mark.anyio


def listing(tools: Any) -> dict[str, dict[str, Any]]:
    return {
        tool.name: {
            "title": tool.title,
            "description": tool.description,
            "input": tool.input_schema,
            "output": tool.output_schema,
            "annotations": tool.annotations,
        }
        for tool in tools
    }


async def test_a_later_server_lists_the_same_tools_from_kept_shapes_and_runs_its_own(
    account: Account, empty_account: Account
) -> None:
    tool_shapes._patterns.clear()  # the first build below works every shape out
    first, later = build_server(account.settings()), build_server(empty_account.settings())
    first_tools = {tool.name: tool for tool in first._tool_manager.list_tools()}
    later_tools = {tool.name: tool for tool in later._tool_manager.list_tools()}
    assert sorted(first_tools) == sorted(later_tools) and len(tool_shapes._patterns) == len(first_tools)
    for name, tool in later_tools.items():
        kept = first_tools[name]
        assert tool.fn is not kept.fn and tool.fn_metadata is not kept.fn_metadata, name
        assert tool.fn_metadata.arg_model is kept.fn_metadata.arg_model, name  # the shape was not worked out again

    async with served(account) as seeded, served(empty_account) as empty:
        assert listing((await seeded.list_tools()).tools) == listing((await empty.list_tools()).tools)
        totals = [structured(await client.call_tool("search_messages", {}))["total"] for client in (seeded, empty)]
    assert totals[0] > 0 and totals[1] == 0
