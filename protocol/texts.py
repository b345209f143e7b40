"""What a person and the model read: the approval form, refusals and the token explanation."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, StrictBool

#: the `inputRequests` key of the approval dialog, and the form's one field
QUESTION_KEY = "approval"
APPROVE_FIELD = "approve"
APPROVE_TITLE = "Yes, make this change"
APPROVE_DESCRIPTION = "Tick to approve exactly the change described above. Leave it unticked to refuse."


class ApprovalForm(BaseModel):
    """The push-era form: one required boolean the person must tick."""

    # strict, as on the 2026-07-28 path: only JSON `true` is a ticked box, never "yes", "true" or 1
    approve: StrictBool = Field(title=APPROVE_TITLE, description=APPROVE_DESCRIPTION)


def approval_schema() -> dict[str, Any]:
    """The form's JSON schema for `elicitation/create` (flat, primitives only, as the spec asks)."""
    return {
        "type": "object",
        "properties": {APPROVE_FIELD: {"type": "boolean", "title": APPROVE_TITLE, "description": APPROVE_DESCRIPTION}},
        "required": [APPROVE_FIELD],
    }


def declined(summary: str, action: str) -> str:
    what = "declined" if action == "decline" else "closed the dialog without approving"
    return f"The person {what}: nothing was changed ({summary}). Do not retry unless the person asks for it."


def not_ticked(summary: str) -> str:
    return (
        f"The person answered without ticking the approval box: nothing was changed ({summary}). "
        "Do not retry unless the person asks for it."
    )


def dialog_failed(summary: str, reason: str) -> str:
    return f"imap-mcp could not show the approval dialog ({reason}): nothing was changed ({summary})."


def token_issued(tool: str, summary: str, token: str, ttl_seconds: int, why: str) -> str:
    minutes = max(1, ttl_seconds // 60)
    return (
        f"Nothing was changed yet: {summary}. {why} To go ahead, call {tool} again with exactly the same "
        f'arguments plus confirm_token: "{token}". The token works for {minutes} minute(s) and only for this '
        "exact change. It proves only that the call was made twice with the same arguments, nothing more: "
        "no person approved it. If a person should decide, ask them before the second call."
    )


def token_refused(tool: str, summary: str) -> str:
    return (
        f"The confirm_token does not fit this call ({summary}): it has expired, was damaged, or was issued for "
        f"other arguments or another state of the mailbox. Nothing was changed. Call {tool} again without "
        "confirm_token to get a new one."
    )


WHY_ELICITATION_OFF = "imap-mcp did not ask a person because it runs with ELICITATION=false."
WHY_NO_DIALOG = "imap-mcp had no way to show a person an approval dialog on this request, so it did not ask."
WHY_TOKEN_ONLY = "This change can be undone, so imap-mcp asks for a two-call confirmation instead of a dialog."
