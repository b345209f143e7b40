"""What CSS and HTML attributes say about how an element looks: whether it hides its text, its colours and
sizes, the top-level rules of a mail's stylesheets, and where a link really goes.

These are the findings `html_text` reports (hidden text removed and counted by why, links with their real
target); they are read as a browser reads them, within bounds (`MAX_STYLE_RULES` selectors, links cut at
`MAX_LINK_CHARS`).
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

#: a font size at or under which text is not read by anyone (px; em, rem and % relative to 16px)
TINY_FONT_PX = 2.9
#: how close two colours may be (in every channel, 0-255) for text in one to be unseen on the other
SAME_COLOUR = 24
OFF_SCREEN_PX = -500.0
_UNITS_PX = {"px": 1.0, "pt": 4 / 3, "em": 16.0, "rem": 16.0, "%": 0.16, "": 1.0, "pc": 16.0, "cm": 37.8, "mm": 3.78}
_LENGTH = re.compile(r"^\s*(-?\d*\.?\d+)\s*([a-z%]*)")
_NAMED_COLOURS = {
    "white": (255, 255, 255),
    "black": (0, 0, 0),
    "red": (255, 0, 0),
    "green": (0, 128, 0),
    "blue": (0, 0, 255),
    "yellow": (255, 255, 0),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
    "silver": (192, 192, 192),
    "whitesmoke": (245, 245, 245),
    "snow": (255, 250, 250),
    "ivory": (255, 255, 240),
    "transparent": (-1, -1, -1),
}
Colour = tuple[int, int, int]
WHITE: Colour = (255, 255, 255)
MAX_LINK_CHARS = 2000
MAX_STYLE_RULES = 300


def length_px(value: str) -> float | None:
    found = _LENGTH.match(value)
    if found is None:
        return None
    unit = found.group(2)
    return float(found.group(1)) * _UNITS_PX[unit] if unit in _UNITS_PX else None


def colour_of(value: str | None) -> Colour | None:
    """An sRGB colour from CSS or an HTML attribute (#rgb, #rrggbb, rgb(), a few names); None if unknown."""
    if not value:
        return None
    text = value.strip().lower().split("!")[0].strip()
    if text.startswith("#"):
        digits = text[1:]
        if len(digits) in (3, 4) and all(c in "0123456789abcdef" for c in digits):
            return (int(digits[0] * 2, 16), int(digits[1] * 2, 16), int(digits[2] * 2, 16))
        if len(digits) in (6, 8) and all(c in "0123456789abcdef" for c in digits):
            return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
        return None
    if text.startswith("rgb"):
        numbers = re.findall(r"-?\d*\.?\d+%?", text)
        if len(numbers) >= 3:
            channels = [float(n[:-1]) * 2.55 if n.endswith("%") else float(n) for n in numbers[:3]]
            if len(numbers) >= 4 and float(numbers[3].rstrip("%")) == 0:
                return None  # fully transparent: shows what is behind
            return (int(channels[0]), int(channels[1]), int(channels[2]))
        return None
    found = _NAMED_COLOURS.get(text)
    return None if found is None or found[0] < 0 else found


def declarations(style: str) -> dict[str, str]:
    """`property: value` pairs of a CSS declaration list, lower case, the last of each winning."""
    found: dict[str, str] = {}
    for item in style.split(";"):
        name, colon, value = item.partition(":")
        if colon:
            found[name.strip().lower()] = value.strip().lower()
    return found


def hiding(style: dict[str, str]) -> str | None:
    """Why declarations `style` hide an element and everything in it (None: they do not)."""
    if style.get("display", "").startswith("none"):
        return "display:none"
    if style.get("mso-hide", "").startswith("all"):
        return "mso-hide:all"
    opacity = style.get("opacity")
    if opacity is not None and length_px(opacity) == 0:
        return "opacity:0"
    if style.get("overflow", "").startswith("hidden") or style.get("overflow-y", "").startswith("hidden"):
        for size in ("max-height", "height", "max-width", "width"):
            if size in style and length_px(style[size]) == 0:
                return f"{size}:0 with overflow:hidden"
    for place in ("left", "top", "right", "margin-left", "margin-top", "text-indent"):
        px = length_px(style.get(place, ""))
        if px is not None and px <= OFF_SCREEN_PX:
            return "positioned off-screen"
    clip = style.get("clip", "")
    if clip.startswith("rect") and not re.search(r"[1-9]\d", clip) and "auto" not in clip:
        return "clipped to nothing"
    return None


def has_image(style: dict[str, str], attributes: dict[str, str | None]) -> bool:
    return (
        "url(" in style.get("background", "")
        or "url(" in style.get("background-image", "")
        or bool(attributes.get("background"))
    )


def first_colour(background: str | None) -> str | None:
    if not background:
        return None
    found = re.search(r"#[0-9a-f]{3,8}\b|rgba?\([^)]*\)|\b[a-z]+\b", background)
    return found.group(0) if found else None


def alike(colour: Colour, background: Colour) -> bool:
    return (
        abs(colour[0] - background[0]) <= SAME_COLOUR
        and abs(colour[1] - background[1]) <= SAME_COLOUR
        and abs(colour[2] - background[2]) <= SAME_COLOUR
    )


def link_target(href: str | None) -> str | None:
    """What a link's `href` points at, on one line and without angle brackets; None for none or an in-page anchor."""
    if href is None:
        return None
    target = re.sub(r"[\x00-\x20\x7f<>]", lambda c: f"%{ord(c.group(0)):02X}", href.strip())
    if not target or target.startswith("#"):
        return None
    return target if len(target) <= MAX_LINK_CHARS else target[:MAX_LINK_CHARS] + "…"


def same_target(shown: str, target: str) -> bool:
    def bare(url: str) -> str:
        return re.sub(r"^(?:https?://|mailto:)", "", url.strip().lower()).rstrip("/")

    return bool(shown) and bare(shown) == bare(target)


#: the properties a stylesheet rule is read for: what hides, colours and font sizes
_SHEET_PROPERTIES = frozenset(
    [
        "display",
        "mso-hide",
        "opacity",
        "overflow",
        "overflow-y",
        "max-height",
        "height",
        "max-width",
        "width",
        "left",
        "top",
        "right",
        "margin-left",
        "margin-top",
        "text-indent",
        "clip",
        "color",
        "background",
        "background-color",
        "background-image",
        "font-size",
        "visibility",
    ]
)


def stylesheet_declarations(tree: LexborHTMLParser) -> dict[int, dict[str, str]]:
    """The declarations top-level rules of `<style>` elements give each element (by node id), later rules
    winning; only `_SHEET_PROPERTIES`, and at most `MAX_STYLE_RULES` selectors in all."""
    found: dict[int, dict[str, str]] = {}
    rules = 0
    for sheet in tree.css("style"):
        for selectors, block in top_level_rules(sheet.text(deep=True) or ""):
            wanted = {k: v for k, v in declarations(block).items() if k in _SHEET_PROPERTIES}
            if not wanted:
                continue
            for selector in selectors.split(","):
                rules += 1
                if rules > MAX_STYLE_RULES:
                    return found
                try:
                    matched = tree.css(selector.strip())
                except Exception:  # a selector Lexbor cannot read applies to nothing
                    continue
                for node in matched:
                    found.setdefault(node.mem_id, {}).update(wanted)
    return found


def top_level_rules(css: str) -> list[tuple[str, str]]:
    """(selectors, declarations) of each rule of `css` outside any @-block."""
    css = re.sub(r"/\*.*?(?:\*/|$)", "", css, flags=re.S)
    rules: list[tuple[str, str]] = []
    depth, start, selector = 0, 0, ""
    for position, char in enumerate(css):
        if char == "{":
            if depth == 0:
                selector, start = css[start:position].strip(), position + 1
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                if not selector.startswith("@") and "{" not in css[start:position]:
                    rules.append((selector, css[start:position]))
                start = position + 1
    return rules
