"""What every way of starting the server does first: read the settings, or stop with one line; announce."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TypeVar

from imap_mcp.server.config import ConfigError, Settings

T = TypeVar("T")


def load_or_exit(loader: Callable[[Mapping[str, str]], T], env: Mapping[str, str]) -> T:
    """`loader(env)`, or one `imap-mcp: …` line on stderr and the setting's exit code (no traceback)."""
    try:
        return loader(env)
    except ConfigError as exc:
        print(f"imap-mcp: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None


def announce(settings: Settings, http: bool) -> None:
    """The start lines about how the server asks (random seal key over HTTP, ELICITATION=false), once each."""
    from imap_mcp.server.guard import start_lines  # here: `check` and `--version` need not load the MCP SDK

    for line in start_lines(settings, http):
        print(f"imap-mcp: {line}", file=sys.stderr)
