"""Characters a person does not see but a model reads: zero-width, bidi controls, tags, fillers.

Mail uses them to hide words (`ig<ZWSP>nore`), to reverse what a name or file name shows
(`invoice<RLO>fdp.exe` reads as `invoiceexe.pdf`), or to smuggle whole sentences in Unicode tag
characters, which render as nothing. `without_invisible` removes them and counts what it removed.

The set is every format character (general category Cf) but the prepended concatenation marks,
which are visible signs (Arabic number sign, …), plus the other default-ignorable characters that
render blank (combining grapheme joiner, Hangul fillers, Khmer inherent vowels, variation
selectors but the emoji ones). Two exceptions keep scripts and emoji intact: a zero-width
(non-)joiner, and the emoji and text presentation selectors, stay where they follow a non-ASCII
character (an emoji sequence, Persian or Indic text), since there they join what is written; after
ASCII, or at the start, they hide nothing anyone needs and split words, so they go.
"""

from __future__ import annotations

import re
import unicodedata

#: Prepended_Concatenation_Mark (Unicode PropList): format characters that are drawn
_VISIBLE_FORMAT = frozenset([*range(0x600, 0x606), 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0x110BD, 0x110CD])
#: Other_Default_Ignorable_Code_Point and Variation_Selector characters that are not Cf: they render as nothing
_BLANK = frozenset(
    [
        0x34F,
        0x115F,
        0x1160,
        0x17B4,
        0x17B5,
        *range(0x180B, 0x1810),
        0x3164,
        *range(0xFE00, 0xFE0E),
        0xFFA0,
        *range(0xE0100, 0xE01F0),
    ]
)
#: kept after a non-ASCII character (see the module docstring)
_JOINERS = "\u200c\u200d\ufe0e\ufe0f"
#: the planes that hold format characters (BMP, SMP, SSP)
_PLANES = (range(0x20000), range(0xE0000, 0xE1000))


def _ranges(points: list[int]) -> str:
    """A regular-expression class body for `points` (sorted), as ranges."""
    parts: list[str] = []
    start = previous = points[0]
    for point in [*points[1:], -1]:
        if point == previous + 1:
            previous = point
            continue
        parts.append(re.escape(chr(start)) + ("-" + re.escape(chr(previous)) if previous > start else ""))
        start = previous = point
    return "".join(parts)


def _invisible_points() -> list[int]:
    format_characters = (
        point
        for plane in _PLANES
        for point in plane
        if unicodedata.category(chr(point)) == "Cf" and point not in _VISIBLE_FORMAT
    )
    return sorted({*format_characters, *_BLANK} - {ord(c) for c in _JOINERS})


INVISIBLE = re.compile(
    f"[{_ranges(_invisible_points())}]|(?<![^\\x00-\\x7f])[{_JOINERS}]",
)


def without_invisible(text: str) -> tuple[str, int]:
    """`text` without the characters a person does not see, and how many there were."""
    if text.isascii():
        return text, 0
    return INVISIBLE.subn("", text)


def invisible_removed(text: str) -> str:
    """`text` without the characters a person does not see."""
    return text if text.isascii() else INVISIBLE.sub("", text)
