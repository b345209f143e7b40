"""Which way a person can be asked on this request: a dialog (2026-07-28), a push, or a token.

| request | ELICITATION=true, client declared form elicitation | otherwise |
|---|---|---|
| 2026-07-28 | `input_required` with an `elicitation/create` form (DIALOG) | TOKEN |
| 2025-11-25 with a back channel (stdio, stateful HTTP) | `elicitation/create` pushed, awaited (PUSH) | TOKEN |
| 2025-11-25 without one (stateless HTTP) | TOKEN | TOKEN |

Capabilities are read per request: a 2026-07-28 client declares them in each request's
`_meta`, so one client may get a dialog on one call and a token on the next.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from mcp.server.mcpserver import Context
from mcp.types import ClientCapabilities
from mcp.types.version import is_version_at_least

#: the first revision whose answers travel in `input_required` retries instead of pushes
INPUT_REQUIRED_VERSION = "2026-07-28"


class Channel(StrEnum):
    """How a person is asked; also names the path that approved a change in the log."""

    DIALOG = "dialog"
    PUSH = "push"
    TOKEN = "token"


#: a `Channel`'s value, as results name the path that approved what they did
Approver = Literal["dialog", "push", "token"]


def uses_input_required(protocol_version: str | None) -> bool:
    return protocol_version is not None and is_version_at_least(protocol_version, INPUT_REQUIRED_VERSION)


def declares_form_elicitation(capabilities: ClientCapabilities | None) -> bool:
    """True when the client can show a form: `elicitation: {}` means form; url-only does not."""
    elicitation = capabilities.elicitation if capabilities else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


def channel_for(ctx: Context, elicitation_enabled: bool) -> Channel:
    """The way to ask a person on this request."""
    if not (elicitation_enabled and declares_form_elicitation(ctx.client_capabilities)):
        return Channel.TOKEN
    if uses_input_required(ctx.protocol_version):
        return Channel.DIALOG
    return Channel.PUSH if ctx.session.can_send_request else Channel.TOKEN
