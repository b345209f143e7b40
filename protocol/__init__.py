"""Protocol: asking a person through MCP, in either era, with one code path for every tool.

`approval.Guard` decides; `eras` picks dialog, push or token per request; `reask` makes a
`requestState` the SDK cannot open count as no answer for guarded tools; `texts` holds what
people and models read; `errors` is the root of every error a caller reads.

The names below are imported on first use, not with the package: `protocol.errors` is imported
by the settings, and `imap-mcp --version` must not wait for the SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .approval import APPROVAL_TTL, TOKEN_TTL, ApprovalRequest, Decision, Guard, PrincipalHook, TokenIssued
    from .eras import Channel, channel_for
    from .errors import ApprovalRefused, ImapMcpError

#: each public name and the module it lives in
_HOMES = {
    "APPROVAL_TTL": "approval",
    "TOKEN_TTL": "approval",
    "ApprovalRequest": "approval",
    "Decision": "approval",
    "Guard": "approval",
    "PrincipalHook": "approval",
    "TokenIssued": "approval",
    "Channel": "eras",
    "channel_for": "eras",
    "ApprovalRefused": "errors",
    "ImapMcpError": "errors",
}
__all__ = [
    "APPROVAL_TTL",
    "TOKEN_TTL",
    "ApprovalRefused",
    "ApprovalRequest",
    "Channel",
    "Decision",
    "Guard",
    "ImapMcpError",
    "PrincipalHook",
    "TokenIssued",
    "channel_for",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
