"""Which tools an account offers: `IMAP_MCP_READ_ONLY`, `IMAP_MCP_TOOLS` and `IMAP_MCP_DISABLE_TOOLS`.

A tool the policy withholds is never registered, so `tools/list` does not show it and calling
it is the protocol's unknown-tool error. Read-only keeps the tools whose annotations say they
change nothing; `get_attachments` writing files to `IMAP_DOWNLOAD_DIR` is a change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..setting_values import ConfigError
from .registry import SERVER_INFO_TOOL, TOOL_NAMES

POLICY_VARIABLES = ("IMAP_MCP_READ_ONLY", "IMAP_MCP_TOOLS", "IMAP_MCP_DISABLE_TOOLS")


@dataclass(frozen=True)
class ToolPolicy:
    #: IMAP_MCP_READ_ONLY: only tools that change nothing
    read_only: bool = False
    #: IMAP_MCP_TOOLS: the only tools offered (get_server_info is always allowed); None = every tool
    allowed: frozenset[str] | None = None
    #: IMAP_MCP_DISABLE_TOOLS: tools never offered
    disabled: frozenset[str] = frozenset()

    def withheld_reason(self, name: str, read_only_hint: bool) -> str | None:
        """Why this policy withholds the tool `name`, or None when it is offered."""
        if name in self.disabled:
            return "named in IMAP_MCP_DISABLE_TOOLS"
        if self.allowed is not None and name not in self.allowed and name != SERVER_INFO_TOOL:
            return "not named in IMAP_MCP_TOOLS"
        if self.read_only and not read_only_hint:
            return "IMAP_MCP_READ_ONLY=true and this tool changes the mailbox or writes files"
        return None


def _tool_list(env: Mapping[str, str], name: str) -> frozenset[str] | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in TOOL_NAMES]
    if unknown:
        raise ConfigError(
            f"{name} names unknown tools ({', '.join(unknown)}): use comma-separated names from "
            f"{', '.join(TOOL_NAMES)}."
        )
    return frozenset(names)


def load_policy(env: Mapping[str, str]) -> ToolPolicy:
    read_only = env.get("IMAP_MCP_READ_ONLY", "false")
    if read_only not in ("true", "false"):
        raise ConfigError(f"IMAP_MCP_READ_ONLY={read_only!r} is not valid: use true or false.")
    return ToolPolicy(
        read_only=read_only == "true",
        allowed=_tool_list(env, "IMAP_MCP_TOOLS"),
        disabled=_tool_list(env, "IMAP_MCP_DISABLE_TOOLS") or frozenset(),
    )
