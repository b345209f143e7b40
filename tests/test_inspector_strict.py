"""MCP Inspector's `--strict` schema lint finds nothing in any tool imap-mcp offers (issue #28).

The pinned Inspector (`tests/inspector/`) lists the tools of `imap-mcp stdio` on a seeded account
with SMTP configured, so every registered tool is offered, and lints each input and output schema.
A type list (`"type": ["string", "null"]`) is one of its warnings: single-`type` dialects, such as
the OpenAPI subset of Gemini function declarations, reject the tool or drop the constraint.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from inspector.inspector_cli import inspector_version, list_tools_strict

from imap_mcp.server.config import load_settings
from imap_mcp.server.serving.app import build_server

pytestmark = pytest.mark.slow

PINNED_INSPECTOR_VERSION = "2.12.0"


def test_inspector_strict_finds_nothing_in_any_tool(sending_env: dict[str, str], tmp_path: Path) -> None:
    env = {
        **{key: value for key, value in sending_env.items() if key.startswith(("IMAP_", "SMTP_"))},
        # the Inspector starts the server with only the variables it is given: the store stays the tests' own
        "XDG_STATE_HOME": sending_env["XDG_STATE_HOME"],
    }
    listing = list_tools_strict([sys.executable, "-m", "imap_mcp.server", "stdio"], env, tmp_path)

    assert inspector_version() == PINNED_INSPECTOR_VERSION
    registered = {tool.name for tool in build_server(load_settings(env))._tool_manager.list_tools()}
    assert {tool["name"] for tool in listing.tools} == registered
    assert {"send_message", "set_webhook_enabled"} <= registered
    assert all("outputSchema" in tool for tool in listing.tools)  # each tool's output schema was linted
    assert not listing.findings, "\n".join(
        f"{tool}: {finding['schema']}.{finding['path']}: {finding['rule']} ({finding['severity']})"
        for tool, finding in listing.findings
    )
