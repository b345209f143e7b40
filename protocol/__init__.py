"""Protocol: asking a person through MCP, in either era, with one code path for every tool.

`approval.Guard` decides; `eras` picks dialog, push or token per request; `reask` makes a
`requestState` the SDK cannot open count as no answer for guarded tools; `texts` holds what
people and models read.
"""

from .approval import APPROVAL_TTL, TOKEN_TTL, ApprovalRequest, Decision, Guard, PrincipalHook, TokenIssued
from .eras import Channel, channel_for

__all__ = [
    "APPROVAL_TTL",
    "TOKEN_TTL",
    "ApprovalRequest",
    "Channel",
    "Decision",
    "Guard",
    "PrincipalHook",
    "TokenIssued",
    "channel_for",
]
