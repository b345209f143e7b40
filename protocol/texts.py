"""What a person and the model read: the approval form, refusals and the token explanation.

Every value shown in a dialog (mailbox names, addresses, subjects) goes through `shown`, so a
value cannot add a line, hide text or reorder it: the dialog says exactly what will happen.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from pydantic import BaseModel, Field, StrictBool

#: the `inputRequests` key of the approval dialog, and the form's one field
QUESTION_KEY = "approval"
APPROVE_FIELD = "approve"
APPROVE_TITLE = "Yes, make this change"
APPROVE_DESCRIPTION = "Tick to approve exactly the change described above. Leave it unticked to refuse."


#: longest value shown in a dialog; longer ones are cut, with a marker saying how much is not shown
SHOWN_MAX = 200
#: categories escaped wherever they are: controls (C0, DEL, C1), format characters (bidirectional
#: controls, zero-width characters, tags), surrogates, private use, unassigned, line and paragraph
#: separators, and every space other than U+0020
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
#: letters that show as nothing (Hangul fillers): they could hide where a value ends
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")


def _escape(char: str) -> str:
    """`char` as JSON escapes it: `\\uXXXX`, a surrogate pair beyond the BMP."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def needs_escape(char: str) -> bool:
    """Whether `char` could add a line, hide text or reorder it if shown as it is."""
    return (unicodedata.category(char) in _ESCAPED_CATEGORIES and char != " ") or char in _BLANK_LETTERS


def _is_mark(char: str) -> bool:
    return unicodedata.category(char) in ("Mn", "Me", "Mc")


def _unanchored(text: str, index: int) -> bool:
    """A combining mark at `index` with nothing of the value's own to sit on (it would cover the opening
    quote), or the third in a row (marks piled up spill over the lines around them)."""
    return index == 0 or (index >= 2 and _is_mark(text[index - 1]) and _is_mark(text[index - 2]))


def shown(value: str, limit: int = SHOWN_MAX) -> str:
    """`value` as a dialog shows it: a JSON string (in double quotes, `"` and `\\` escaped) in which every
    character `needs_escape` names is escaped visibly (`\\u2028`, `\\u202e`), and so is a combining mark
    that would cover the opening quote or pile up (`_unanchored`). A value longer than `limit` is cut, and
    the marker after the closing quote says how many characters are not shown."""
    kept = value[:limit]
    out = []
    for index, char in enumerate(kept):
        if char in '"\\':
            out.append("\\" + char)
        elif needs_escape(char) or (_is_mark(char) and _unanchored(kept, index)):
            out.append(_escape(char))
        else:
            out.append(char)
    rest = len(value) - len(kept)
    cut = f"… ({rest} more characters not shown)" if rest else ""
    return '"' + "".join(out) + '"' + cut


_PLAIN_WORD = re.compile(r"[!#-\[\]-~]+")


def word(value: str) -> str:
    """A value that is normally one word (an address, an account): as it is when it is one word of printable
    ASCII without quotes or backslashes, no longer than `SHOWN_MAX`; anything else as `shown` gives it."""
    return value if len(value) <= SHOWN_MAX and _PLAIN_WORD.fullmatch(value) else shown(value)


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
