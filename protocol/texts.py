"""What a person and the model read: the approval form, refusals and the token explanation.

Every value shown in a dialog (mailbox names, addresses, subjects) goes through `shown`, so a
value cannot add a line, hide text or reorder it: the dialog says exactly what will happen.
Times and sizes the server knows are written in a person's terms (`arrived`, `size_text`).
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Any

from pydantic import BaseModel, Field, StrictBool

#: the `inputRequests` key of the approval dialog, and the form's one field
QUESTION_KEY = "approval"
APPROVE_FIELD = "approve"
APPROVE_TITLE = "Yes, make this change"
APPROVE_DESCRIPTION = "Tick to approve exactly the change described above. Leave it unticked to refuse."
#: the second box of a form whose change the operator's policy asks a second confirmation for (`Guard`)
SECOND_FIELD = "approve_new"
SECOND_TITLE = "Yes, also to the recipients marked new"


#: longest value shown in a dialog; longer ones are cut, with a marker saying how much is not shown
SHOWN_MAX = 200
#: general categories escaped wherever they are: controls (Cc: C0, DEL, C1), format characters (Cf: bidirectional
#: controls, zero-width characters, tags, musical beam and slur controls), surrogates (Cs), private use (Co),
#: unassigned (Cn), line and paragraph separators (Zl, Zp), and spaces (Zs) other than U+0020
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
#: the assigned Default_Ignorable_Code_Point characters outside those categories. DerivedCoreProperties.txt defines
#: the property as Cf plus Variation_Selector plus Other_Default_Ignorable_Code_Point (both in PropList.txt; Unicode
#: 14.0, this Python's `unicodedata`), less a few visible Cf; the reserved code points of those lists are Cn. A
#: renderer draws them as nothing. `unicodedata` does not expose the property, so its two lists are written here.
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER (Mn)
    (0x115F, 0x1160),  # HANGUL CHOSEONG FILLER, HANGUL JUNGSEONG FILLER (Lo)
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ, AA (Mn)
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTOR ONE-FOUR (Mn; U+180E between them is Cf)
    (0x3164, 0x3164),  # HANGUL FILLER (Lo)
    (0xFE00, 0xFE0F),  # VARIATION SELECTOR-1 to -16 (Mn)
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER (Lo)
    (0xE0100, 0xE01EF),  # VARIATION SELECTOR-17 to -256 (Mn)
)
_IGNORABLE = frozenset(chr(code) for first, last in _IGNORABLE_RANGES for code in range(first, last + 1))
#: characters drawn as nothing that no Unicode property marks (none says a glyph has no ink), so they are named:
#: U+2800 BRAILLE PATTERN BLANK (no dot raised) and U+1D159 MUSICAL SYMBOL NULL NOTEHEAD are So, blank in the code
#: charts; U+FFFC OBJECT REPLACEMENT CHARACTER (So) stands for an embedded object and most text renderers draw
#: nothing; U+16FE4 KHITAN SMALL SCRIPT FILLER (Mn) is an invisible layout signal, not default-ignorable
_DRAWN_BLANK = frozenset("\u2800\U0001d159\ufffc\U00016fe4")


def _escape(char: str) -> str:
    """`char` as JSON escapes it: `\\uXXXX`, a surrogate pair beyond the BMP."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def needs_escape(char: str) -> bool:
    """Whether `char` could add a line, hide text or reorder it if shown as it is: whether it breaks a line,
    reorders text, or renders blank or invisible. Unicode says which code points render blank (White_Space) and
    which invisible (Default_Ignorable_Code_Point); each kind, by the rule here that catches it:

    - line breaks: Cc (LF, CR, VT, FF, NEL, U+001C-U+001E) and Zl, Zp by category;
    - reordering: the bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) are Cf;
    - blank, White_Space: Cc, Zl, Zp and Zs; every Zs other than U+0020 (no-break, ideographic and the other
      spaces) by category;
    - invisible, Default_Ignorable_Code_Point: its Cf part (zero-width space and joiners, soft hyphen, U+180E,
      U+2060-U+2064, tags U+E0001 and U+E0020-U+E007F, musical controls U+1D173-U+1D17A) and its reserved part
      (Cn) by category, the rest from `_IGNORABLE_RANGES` (variation selectors, Hangul fillers U+115F, U+1160,
      U+3164, U+FFA0, Khmer inherent vowels U+17B4, U+17B5, the combining grapheme joiner);
    - drawn blank without a property saying so: `_DRAWN_BLANK` (U+2800, U+1D159, U+FFFC, U+16FE4);
    - what a font may not have or a terminal may act on: Cs, Co, Cn, and every other Cc.

    Any other combining mark (Mn, Me, Mc) is drawn on the character before it; `shown` escapes those only where
    they would sit on the opening quote or pile up (`_unanchored`)."""
    if char == " ":
        return False
    return unicodedata.category(char) in _ESCAPED_CATEGORIES or char in _IGNORABLE or char in _DRAWN_BLANK


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


class ApprovalFormWithSecond(ApprovalForm):
    """The push-era form with the second box the operator's policy asks for: both must be ticked."""

    approve_new: StrictBool = Field(title=SECOND_TITLE)


def approval_schema(second: str | None = None) -> dict[str, Any]:
    """The form's JSON schema for `elicitation/create` (flat, primitives only, as the spec asks); with `second` (what
    the second confirmation is about) a second required box."""
    properties = {APPROVE_FIELD: {"type": "boolean", "title": APPROVE_TITLE, "description": APPROVE_DESCRIPTION}}
    if second is not None:
        properties[SECOND_FIELD] = {"type": "boolean", "title": SECOND_TITLE, "description": second}
    return {"type": "object", "properties": properties, "required": list(properties)}


def dialog_message(question: str, details: tuple[str, ...], second: str | None) -> str:
    """What a person reads: the question (what the approval binds), then what the server knows now (`details`,
    read when the question is shown), then the second confirmation the operator's policy asks for, if any."""
    tail = [f"Second confirmation (the operator's policy): {second}"] if second is not None else []
    return "\n".join([question, *details, *tail])


_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def arrived(moment: dt.datetime, now: dt.datetime) -> str:
    """`moment` as a person says it, in `now`'s time zone: "today 09:14", "yesterday 17:02", "3 Nov", "3 Nov 2025"."""
    local = moment.astimezone(now.tzinfo)
    days = (now.date() - local.date()).days
    if days == 0:
        return f"today {local:%H:%M}"
    if days == 1:
        return f"yesterday {local:%H:%M}"
    day = f"{local.day} {_MONTH_NAMES[local.month - 1]}"
    return day if local.year == now.year else f"{day} {local.year}"


def size_text(size: int) -> str:
    """A size in bytes as a person reads it: "812 bytes", "3.4 KB", "12 KB", "3.4 MB" (1 KB = 1,024 bytes)."""
    if size < 1024:
        return f"{size} bytes"
    value, units = size / 1024, ["KB", "MB", "GB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{value:.1f} {units[0]}" if value < 10 else f"{value:.0f} {units[0]}"


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


def token_issued(tool: str, summary: str, token: str, ttl_seconds: int, why: str, details: tuple[str, ...] = ()) -> str:
    """The first of two calls: what the token proves, and `details` (what the server knows now), as a dialog shows."""
    minutes = max(1, ttl_seconds // 60)
    known = (" What imap-mcp knows now: " + " ".join(details)) if details else ""
    return (
        f"Nothing was changed yet: {summary}. {why} To go ahead, call {tool} again with exactly the same "
        f'arguments plus confirm_token: "{token}". The token works for {minutes} minute(s) and only for this '
        "exact change. It proves only that the call was made twice with the same arguments, nothing more: "
        f"no person approved it. If a person should decide, ask them before the second call.{known}"
    )


def second_token_issued(tool: str, summary: str, token: str, ttl_seconds: int, second: str) -> str:
    """The operator's policy asks a second confirmation: a second token, for a third call."""
    minutes = max(1, ttl_seconds // 60)
    return (
        f"Nothing was changed yet: {summary}. The operator's policy asks a second confirmation: {second} If a "
        f"person agrees to that too, call {tool} once more with exactly the same arguments plus confirm_token: "
        f'"{token}" (this new token, not the first one). It works for {minutes} minute(s) and only for this exact '
        "change; like the first, it proves only that the call was repeated, not that a person approved."
    )


def second_not_ticked(summary: str) -> str:
    return (
        f"The person did not tick the second box the operator's policy asks for: nothing was changed ({summary}). "
        "Do not retry unless the person asks for it."
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
