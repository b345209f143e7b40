"""Which tools an account offers: `IMAP_MCP_READ_ONLY`, `IMAP_MCP_TOOLS` and `IMAP_MCP_DISABLE_TOOLS`.

A tool the policy withholds is never registered, so `tools/list` does not show it and calling
it is the protocol's unknown-tool error. Read-only keeps the tools whose annotations say they
change nothing; `get_attachments` writing files to `IMAP_DOWNLOAD_DIR` is a change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import Icon, ToolAnnotations

from imap_mcp.server.config import ConfigError

SERVER_INFO_TOOL = "get_server_info"
#: every tool this server can offer; a name outside it in a tool list is a start-up error
TOOL_NAMES = (
    "list_mailboxes",
    "search_messages",
    "list_new_messages",
    "get_message",
    "get_attachments",
    "set_message_flags",
    "save_draft",
    "delete_messages",
    "move_messages",
    "manage_mailbox",
    "send_message",
    "reply_to_message",
    SERVER_INFO_TOOL,
    "get_webhook_status",
    "set_webhook_enabled",
    "set_webhook_outbox_limits",
)
SENDING_TOOLS = ("send_message", "reply_to_message")
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


class PolicyServer(MCPServer):
    """An `MCPServer` that registers only the tools its policy offers, and remembers why the others are not."""

    def __init__(self, *args: Any, policy: ToolPolicy, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.policy = policy
        self._withheld: dict[str, str] = {}

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        tool_name = name or fn.__name__
        reason = self.policy.withheld_reason(tool_name, bool(annotations and annotations.read_only_hint))
        if reason is not None:
            self._withheld[tool_name] = reason
            return
        super().add_tool(fn, name, title, description, annotations, icons, meta, structured_output)

    @property
    def withheld(self) -> Mapping[str, str]:
        """The tools the policy kept from being registered, with the reason."""
        return dict(self._withheld)

    def not_offered(self, offered: Collection[str]) -> dict[str, str]:
        """Every tool of `TOOL_NAMES` not in `offered`, with the reason it is not."""
        reasons = {name: reason for name, reason in self._withheld.items() if name in TOOL_NAMES}
        for name in TOOL_NAMES:
            if name not in offered and name not in reasons:
                reasons[name] = "SMTP_HOST is not set" if name in SENDING_TOOLS else "not offered by this server"
        return reasons
