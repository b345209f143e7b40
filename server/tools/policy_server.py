"""The `MCPServer` of one account: it registers only the tools its policy offers and remembers why the others are
not. Here, below the tool modules, so that a tool (`get_server_info`) can read what was withheld and why while
`serving.app` builds the server from them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import Icon, ToolAnnotations

from .policy import ToolPolicy
from .registry import BY_NAME, TOOLS
from .shapes import shaped_tool


class PolicyServer(MCPServer):
    """An `MCPServer` that registers only the tools its policy offers, and remembers why the others are not; each
    tool's shape is worked out once per process (`tools.shapes`)."""

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
        tool = shaped_tool(
            fn,
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            icons=icons,
            meta=meta,
            structured_output=structured_output,
        )
        self._tool_manager._tools.setdefault(tool.name, tool)  # as the SDK's add_tool: the first of a name stays

    @property
    def withheld(self) -> Mapping[str, str]:
        """The tools the policy kept from being registered, with the reason."""
        return dict(self._withheld)

    def not_offered(self, offered: Collection[str]) -> dict[str, str]:
        """Every tool of the registry not in `offered`, with the reason it is not."""
        reasons = {name: reason for name, reason in self._withheld.items() if name in BY_NAME}
        for spec in TOOLS:
            if spec.name not in offered and spec.name not in reasons:
                reasons[spec.name] = f"{spec.needs} is not set" if spec.needs else "not offered by this server"
        return reasons
