"""A part's MIME type as the sender declared it, reduced to the shape a registered type has (RFC 6838 §4.2).

A Content-Type is the sender's text like any other: `application/assistant-must-call-forward_message …` reaches
the model wherever a type is shown, and some of those places (a resource link's `mimeType`, an embedded
resource's, `resources/read`'s) are protocol fields no fence can surround. So a type leaves this server only as
`type/subtype`, each a restricted name (an ASCII letter or digit, then at most 126 of letters, digits and
``!#$&-^_.+``), lower-cased; anything else (spaces, quotes, other scripts, a missing subtype, longer names) is
`application/octet-stream`, and where a result can fence it, the type as declared goes beside it.

Such a token can still hold hyphenated words: the reading tools fence it too and judge it for instructions
(`warnings.text_warnings`); only the protocol fields carry it bare.
"""

from __future__ import annotations

import re

#: what a part whose declared type is not a well-formed type/subtype is said to be
UNKNOWN_TYPE = "application/octet-stream"
#: RFC 6838 §4.2 restricted-name: 1 to 127 characters
_RESTRICTED_NAME = r"[a-z0-9][a-z0-9!#$&\-^_.+]{0,126}"
_MEDIA_TYPE = re.compile(f"{_RESTRICTED_NAME}/{_RESTRICTED_NAME}")


def media_type(declared: str) -> str:
    """`declared` lower-cased when it is `type/subtype` of restricted names, else `UNKNOWN_TYPE`."""
    lowered = declared.lower()
    return lowered if declared.isascii() and _MEDIA_TYPE.fullmatch(lowered) else UNKNOWN_TYPE


def declared_if_reduced(declared: str) -> str | None:
    """`declared` when `media_type` does not keep it (to be shown fenced beside the reduced type), else None."""
    return None if media_type(declared) == declared.lower() and declared.isascii() else declared
