"""Glue between the settings and `protocol.Guard`: the key ring, the start lines, and the store an approval is for.

At server/'s top level, not in a feature's folder: it joins the settings, the store and `protocol`, which no one
feature owns.

The questions each feature asks live with the feature: `changes.questions` (messages and
mailboxes), `outgoing.approval` (mail to send).
"""

from __future__ import annotations

from dataclasses import replace

import anyio.to_thread
from mcp.server.request_state import authenticated_principal

from imap_mcp.protocol import ApprovalRequest, Guard, PrincipalHook
from imap_mcp.sealing import KeyRing, Scope

from .config import Settings
from .store.ledger import writable_store_at

ELICITATION_OFF_LINE = "ELICITATION=false — guarded tools fall back to the two-call token"
EPHEMERAL_KEY_LINE = (
    "IMAP_MCP_SEAL_KEYS is not set — approvals are sealed with a random key of this process, so other "
    "replicas (and this one after a restart) will ask again"
)


def build_guard(
    settings: Settings, principal: PrincipalHook = authenticated_principal, unset_ring: KeyRing | None = None
) -> Guard:
    """The guard for `settings`: the configured key ring, or else `unset_ring` (default: a new random one)."""
    ring = KeyRing([k.reveal() for k in settings.seal_keys]) if settings.seal_keys else unset_ring or KeyRing.random()
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


async def bound_to_the_store(request: ApprovalRequest, store_url: str) -> ApprovalRequest:
    """`request` bound to the store whose approval ledger will run it once, after a write showed that store takes
    one: call it right before `Guard.approve`.

    So a store that could not record a send or change (locked, read-only, full, gone, replaced) refuses the call
    before anyone is asked (`StoreError`), on the question's call and on the answer's. And the store's identity
    is a scope of the approved target: an approval given while another store was in place (the file deleted and
    made again, another database) does not fit, so a fresh store, which knows nothing of what that approval
    already did, can never run it a second time.
    """
    identity = await anyio.to_thread.run_sync(writable_store_at, store_url)
    target = request.target
    return replace(request, target=replace(target, scopes=(*target.scopes, Scope("store", identity))))
