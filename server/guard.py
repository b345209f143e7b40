"""Glue between the settings and `protocol.Guard`: the key ring and the start lines.

The questions each feature asks live with the feature: `changes.questions` (messages and
mailboxes), `outgoing.approval` (mail to send).
"""

from __future__ import annotations

from mcp.server.request_state import authenticated_principal

from imap_mcp.protocol import Guard, PrincipalHook
from imap_mcp.sealing import KeyRing

from .config import Settings

ELICITATION_OFF_LINE = "ELICITATION=false — guarded tools fall back to the two-call token"
EPHEMERAL_KEY_LINE = (
    "IMAP_MCP_SEAL_KEYS is not set — approvals are sealed with a random key of this process, so other "
    "replicas (and this one after a restart) will ask again"
)


def build_guard(settings: Settings, principal: PrincipalHook = authenticated_principal) -> Guard:
    """The guard for `settings`: the configured key ring, or a random one for this process."""
    ring = KeyRing([k.reveal() for k in settings.seal_keys]) if settings.seal_keys else KeyRing.random()
    return Guard(ring, elicitation=settings.elicitation, principal=principal)


def start_lines(settings: Settings, http: bool) -> list[str]:
    """What the server says once at start about how it asks (each becomes one `imap-mcp: ...` line).

    The random-key warning only over HTTP, where replicas and restarts share clients; a stdio
    process is its client's only server, and a restart loses nothing a person would miss.
    """
    lines = [EPHEMERAL_KEY_LINE] if http and not settings.seal_keys else []
    if not settings.elicitation:
        lines.append(ELICITATION_OFF_LINE)
    return lines
