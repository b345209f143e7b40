"""HTML mail as the text a person sees, at a cost bounded by the size of the HTML whatever it holds.

The HTML is parsed by Lexbor (through `selectolax`), a real HTML5 parser, so what a browser would
hide and where a link really goes are read as a browser reads them, never guessed by regular
expressions over markup. Then one walk over the tree writes the text:

- **Hidden text is removed and counted** (`Converted.hidden`): elements hidden by `display:none`,
  the `hidden` attribute, `visibility:hidden`, `opacity:0`, `mso-hide:all`, a zero height or width
  with `overflow:hidden`, off-screen positioning (a left/top/margin/text-indent of -500px or
  less) or a zero clip, whether in a `style` attribute or in a top-level rule of a `<style>`
  element (rules inside `@media` apply to some screens only and are not applied); and text whose
  own font size is under 3px (0.2em), or whose colour is (nearly) the colour of its background
  (`color`/`background-color`, `bgcolor` and `<font color>`, inherited as in CSS; white when no
  background is set).
- **Links show their real target**: `text <target>`, the target as the `href` says it; when the
  text is the target itself it is shown once. Every link is kept in `Converted.links` to compare
  its text with its target (`warnings.link_mismatches`).
- **Images never load**: every `<img>` is dropped (no markdown image is ever written), and those on
  a remote server are counted, tiny ones (1x1, the tracking pixels) apart. Markdown image syntax in
  the text itself (`![…](…)`) is broken up, so no client that renders markdown loads anything.

Two bounds keep time and output linear in the input, which the caller bounds (`fetch_budget`):

- `bounded_html` first rewrites the HTML in one pass (every search bounded by `MAX_TAG`
  characters): complete tags are kept, comments and declarations dropped, every other `<` becomes
  `&lt;`, and elements nested deeper than `MAX_DEPTH` are read as if they were not nested any further
  (their start and end tags are dropped, their text kept). An HTML5 parser checks the stack of open
  elements at many tags, so its time grows with length times depth: 200 KB of `<div>` took seconds.
- Lists and quotes deeper than `MAX_NESTING` are not indented any further, so no line's prefix
  grows with the input.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

#: the longest tag (with its attributes) kept; a longer one is read as text
MAX_TAG = 2048
#: a complete start or end tag: a name, then attributes (quoted, unquoted, or bare) separated by
#: spaces or slashes, or directly after a quoted value; possessive throughout, so no input makes
#: it backtrack
_TAG = re.compile(
    r"""</?([A-Za-z][A-Za-z0-9:-]*+)"""
    r"""(?>(?:[\s/]++|(?<=["']))[^\s"'<>/=]++(?>\s*+=\s*+(?>"[^"]*+"|'[^']*+'|[^\s"'<>`]++))?+)*+"""
    r"""[\s/]*+>"""
)
_DECLARATION = re.compile(r"<[!?][^<>]*>")
#: deepest nesting of elements the parser is given
MAX_DEPTH = 100
#: elements that never hold others, or that the next of their kind closes: they add no depth
_NO_DEPTH = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "track",
        "wbr",
        "param",
        "keygen",
        "p",
        "li",
        "dt",
        "dd",
        "tr",
        "td",
        "th",
        "option",
        "optgroup",
        "rb",
        "rt",
        "rp",
        "tbody",
        "thead",
        "tfoot",
        "colgroup",
        "caption",
    ]
)
#: elements whose content is text up to their end tag, never markup
_RAW_TEXT = frozenset(
    ["script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"]
)


_TAG_NAME = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)")


def nests_too_deep(html: str) -> bool:
    """Whether the elements of `html` may nest deeper than `MAX_DEPTH`: what `bounded_html` counts, over every
    tag name (complete tag or not, in raw text or not), so an overestimate. Most mail is not, and is parsed
    as it is."""
    open_tags = _OpenTags()
    for tag in _TAG_NAME.finditer(html):
        name = tag.group(2).lower()
        if tag.group(1):
            open_tags.close(name)
        elif name not in _NO_DEPTH:
            open_tags.open(name)
            if len(open_tags) > MAX_DEPTH:
                return True
    return False


def bounded_html(html: str) -> str:
    """`html` with only complete tags as markup, nested at most `MAX_DEPTH` deep (see the module docstring)."""
    out: list[str] = []
    open_tags = _OpenTags()  #: the elements kept open
    dropped: Counter[str] = Counter()  #: start tags dropped (too deep) whose end tags are still to come
    position, end = 0, len(html)
    while position < end:
        bracket = html.find("<", position)
        if bracket < 0:
            out.append(html[position:])
            break
        out.append(html[position:bracket])
        if html.startswith("<!--", bracket):
            close = html.find("-->", bracket + 4)
            position = end if close < 0 else close + 3  # an unfinished comment hides the rest, as in a browser
            continue
        limit = min(end, bracket + MAX_TAG)
        tag = _TAG.match(html, bracket, limit)
        if tag is None:
            declaration = _DECLARATION.match(html, bracket, limit)
            out.append("" if declaration else "&lt;")
            position = declaration.end() if declaration else bracket + 1
            continue
        position = tag.end()
        name = tag.group(1).lower()
        if tag.group(0).startswith("</"):
            if dropped[name]:
                dropped[name] -= 1
            else:
                open_tags.close(name)
                out.append(tag.group(0))
        elif name in _RAW_TEXT:
            closing = re.compile(rf"</{name}[\s/>]", re.IGNORECASE).search(html, position)
            stop = closing.start() if closing else end
            out += [tag.group(0), html[position:stop].replace("<", "&lt;") if name != "style" else html[position:stop]]
            position = stop
            if closing:
                out.append(f"</{name}>")
                position = html.find(">", closing.start()) + 1 or end
        elif name in _NO_DEPTH or tag.group(0).endswith("/>"):
            out.append(tag.group(0))
        elif len(open_tags) >= MAX_DEPTH:
            dropped[name] += 1
        else:
            open_tags.open(name)
            out.append(tag.group(0))
    return "".join(out)


class _OpenTags:
    """The names of the elements open, innermost last, and how many of each (so an end tag of none is cheap)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.counts: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.names)

    def open(self, name: str) -> None:
        self.names.append(name)
        self.counts[name] += 1

    def close(self, name: str) -> None:
        """Pop down to and including the innermost `name`, as an end tag closes what it contains."""
        if not self.counts[name]:
            return
        while True:
            popped = self.names.pop()
            self.counts[popped] -= 1
            if popped == name:
                return


#: deepest nesting of lists and quotes that is shown as such
MAX_NESTING = 12
#: elements whose content is never text a person reads
_SKIPPED = frozenset(
    [
        "head",
        "script",
        "style",
        "title",
        "template",
        "noscript",
        "iframe",
        "object",
        "embed",
        "svg",
        "math",
        "canvas",
        "audio",
        "video",
        "select",
        "datalist",
        "meta",
        "link",
        "base",
    ]
)
_PARAGRAPHS = frozenset(
    ["p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "blockquote", "pre", "table", "hr", "figure"]
)
_BLOCKS = frozenset(
    [
        "div",
        "section",
        "article",
        "header",
        "footer",
        "main",
        "nav",
        "aside",
        "address",
        "center",
        "form",
        "fieldset",
        "legend",
        "details",
        "summary",
        "dt",
        "dd",
        "tr",
        "td",
        "th",
        "caption",
        "tbody",
        "thead",
        "tfoot",
        "figcaption",
        "li",
    ]
)
#: elements whose attributes (not only their style) change what they pass on
_STYLED_TAGS = frozenset({"font", "body", "ul", "ol", "blockquote", "pre", "textarea"})
_STRONG, _EMPHASIS = frozenset({"b", "strong"}), frozenset({"i", "em"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
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
BLACK: Colour = (0, 0, 0)
MAX_LINK_CHARS = 2000
MAX_STYLE_RULES = 300
_MARKDOWN_IMAGE = re.compile(r"!\[")


def _length_px(value: str) -> float | None:
    found = _LENGTH.match(value)
    if found is None:
        return None
    unit = found.group(2)
    return float(found.group(1)) * _UNITS_PX[unit] if unit in _UNITS_PX else None


def _colour(value: str | None) -> Colour | None:
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
    if opacity is not None and _length_px(opacity) == 0:
        return "opacity:0"
    if style.get("overflow", "").startswith("hidden") or style.get("overflow-y", "").startswith("hidden"):
        for size in ("max-height", "height", "max-width", "width"):
            if size in style and _length_px(style[size]) == 0:
                return f"{size}:0 with overflow:hidden"
    for place in ("left", "top", "right", "margin-left", "margin-top", "text-indent"):
        px = _length_px(style.get(place, ""))
        if px is not None and px <= OFF_SCREEN_PX:
            return "positioned off-screen"
    clip = style.get("clip", "")
    if clip.startswith("rect") and not re.search(r"[1-9]\d", clip) and "auto" not in clip:
        return "clipped to nothing"
    return None


@dataclass
class Converted:
    """HTML as text, and what the conversion took out."""

    text: str
    #: hidden texts removed, by why they were hidden
    hidden: Counter[str] = field(default_factory=Counter)
    hidden_chars: int = 0
    remote_images: int = 0
    tracking_pixels: int = 0
    #: every link shown: (its text, its target)
    links: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _Style:
    """What is inherited down the tree: colours, font size, visibility, list and quote depth, pre."""

    #: the text colour when one was set (by the mail, not the reader's default), else None
    colour: Colour | None = None
    #: the background colour; None when an image lies behind (its colours are unknown)
    background: Colour | None = WHITE
    tiny: bool = False
    invisible: bool = False
    pre: bool = False
    lists: tuple[str, ...] = ()
    quotes: int = 0


_SPACES = re.compile(r"[ \t\n\r\f\v\xa0]+")


class _Writer:
    """Text out, line by line: pending line breaks, quote prefixes, collapsed spaces."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending = 0  #: line breaks owed before the next text
        self.at_line_start = True
        self.prefix = ""

    def breaks(self, count: int) -> None:
        if self.parts:
            self.pending = max(self.pending, count)

    def line_break(self) -> None:
        if self.parts:
            self.pending += 1

    def write(self, text: str, pre: bool = False) -> None:
        if not pre:
            text = _SPACES.sub(" ", text)
            if self.at_line_start or self.pending or (self.parts and self.parts[-1].endswith(" ")):
                text = text.lstrip(" ")
            if not text:
                return
        if self.pending:
            self.parts.append("\n" * self.pending)
            self.pending, self.at_line_start = 0, True
        if self.at_line_start and self.prefix:
            self.parts.append(self.prefix)
        if pre and self.prefix and "\n" in text:
            text = text.replace("\n", "\n" + self.prefix)
        self.parts.append(text)
        self.at_line_start = text.endswith("\n")

    def mark(self, marker: str) -> None:
        """An emphasis marker, right after what was written (a pending line break stays owed)."""
        if self.parts:
            self.parts.append(marker)
            self.at_line_start = False

    def since(self, start: int) -> str:
        """What was written since part `start`, on one line, without emphasis markers."""
        return " ".join("".join(self.parts[start:]).replace("**", "").split())

    def text(self) -> str:
        lines = "".join(self.parts).split("\n")
        return re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in lines)).strip()


def _has_image(style: dict[str, str], attributes: dict[str, str | None]) -> bool:
    return (
        "url(" in style.get("background", "")
        or "url(" in style.get("background-image", "")
        or bool(attributes.get("background"))
    )


class _Converter:
    def __init__(self, tree: LexborHTMLParser) -> None:
        self.result = Converted(text="")
        self.writer = _Writer()
        self.sheet = _stylesheet_declarations(tree)
        #: each style attribute seen, read once: its declarations and whether they hide
        self.styles: dict[str, tuple[dict[str, str], str | None]] = {"": ({}, None)}

    def declared(self, node: LexborNode, attributes: dict[str, str | None]) -> tuple[dict[str, str], str | None]:
        """The element's declarations (its top-level stylesheet rules', then its style attribute's, which win),
        and why they hide it (None: they do not)."""
        style = attributes.get("style") or ""
        found = self.styles.get(style)
        if found is None:
            own = declarations(style)
            found = self.styles[style] = (own, hiding(own))
        if self.sheet:
            sheet = self.sheet.get(node.mem_id)
            if sheet:
                merged = {**sheet, **found[0]}
                return merged, hiding(merged)
        return found

    def inherited(self, tag: str, attributes: dict[str, str | None], style: dict[str, str], parent: _Style) -> _Style:
        if not style and tag not in _STYLED_TAGS and not (attributes.get("bgcolor") or attributes.get("background")):
            return parent
        colour = _colour(style.get("color")) or (
            _colour(attributes.get("color"))
            if tag == "font"
            else _colour(attributes.get("text"))
            if tag == "body"
            else None
        )
        background: Colour | None = (
            _colour(style.get("background-color"))
            or _colour(_first_colour(style.get("background")))
            or _colour(attributes.get("bgcolor"))
        )
        image = _has_image(style, attributes)
        size = style.get("font-size")
        visibility = style.get("visibility")
        lists = (*parent.lists, tag) if tag in ("ul", "ol") and len(parent.lists) < MAX_NESTING else parent.lists
        quotes = parent.quotes + 1 if tag == "blockquote" and parent.quotes < MAX_NESTING else parent.quotes
        pre = parent.pre or tag in ("pre", "textarea")
        if (
            colour is None
            and background is None
            and not image
            and size is None
            and visibility is None
            and lists is parent.lists
            and quotes == parent.quotes
            and pre == parent.pre
        ):
            return parent
        tiny = parent.tiny
        if size is not None:
            px = _length_px(size)
            tiny = px is not None and px <= TINY_FONT_PX
        return _Style(
            colour or parent.colour,
            None if image else background or parent.background,
            tiny,
            parent.invisible if visibility is None else visibility.startswith(("hidden", "collapse")),
            pre,
            lists,
            quotes,
        )

    def convert(self, root: LexborNode) -> Converted:
        # (node, the style it inherits, None before its children or what `leave` needs after them)
        stack: list[tuple[LexborNode, _Style, Any]] = [(root, _Style(), None)]
        while stack:
            node, style, after = stack.pop()
            if after is not None:
                self.leave(after, style)
                continue
            tag = node.tag or ""
            if tag == "-text":
                self.text(node.text_content or "", style)
                continue
            if tag.startswith("-") or tag in _SKIPPED:
                continue
            attributes = node.attributes
            declared, why = self.declared(node, attributes)
            if "hidden" in attributes:
                why = "the hidden attribute"
            if why is not None:
                self.remove(node, why)
                continue
            if tag == "img":
                self.image(attributes, declared)
                continue
            own = self.inherited(tag, attributes, declared, style)
            stack.append((node, style, self.enter(node, tag, own)))
            children: list[LexborNode] = []
            child = node.child
            while child is not None:
                children.append(child)
                child = child.next
            stack.extend((child, own, None) for child in reversed(children))
        self.result.text = _MARKDOWN_IMAGE.sub("! [", self.writer.text())
        return self.result

    def text(self, content: str, style: _Style) -> None:
        if content.strip():
            why = (
                "visibility:hidden"
                if style.invisible
                else "a tiny font size"
                if style.tiny
                else "the colour of its background"
                if style.colour is not None and style.background is not None and _alike(style.colour, style.background)
                else None
            )
            if why is not None:
                self.result.hidden[why] += 1
                self.result.hidden_chars += len(content.strip())
                return
        self.writer.write(content, style.pre)

    def remove(self, node: LexborNode, why: str) -> None:
        removed = (node.text(deep=True) or "").strip()
        if removed:
            self.result.hidden[why] += 1
            self.result.hidden_chars += len(removed)

    def image(self, attributes: dict[str, str | None], style: dict[str, str]) -> None:
        source = (attributes.get("src") or "").strip().lower()
        if not source.startswith(("http:", "https:", "//")):
            return  # an attached (cid:) or inline (data:) image loads nothing from anywhere
        width = _length_px(style.get("width") or attributes.get("width") or "")
        height = _length_px(style.get("height") or attributes.get("height") or "")
        if (width is not None and width <= 2) or (height is not None and height <= 2):
            self.result.tracking_pixels += 1
        else:
            self.result.remote_images += 1

    def enter(self, node: LexborNode, tag: str, style: _Style) -> Any:
        """Write what opens `tag`; what `leave` needs to close it."""
        writer = self.writer
        writer.prefix = "> " * style.quotes
        if tag in _PARAGRAPHS:
            writer.breaks(2)
        elif tag in _BLOCKS:
            writer.breaks(1)
        if tag == "br":
            writer.line_break()
        elif tag in _HEADINGS:
            writer.write("#" * _HEADINGS[tag] + " ", pre=True)
        elif tag == "li":
            ordered = style.lists[-1:] == ("ol",)
            writer.write("  " * max(len(style.lists) - 1, 0) + ("1. " if ordered else "* "), pre=True)
        elif tag in _STRONG or tag in _EMPHASIS:
            if (node.text(deep=True) or "").strip():
                writer.write("**" if tag in _STRONG else "_")
                return tag
            return "-"
        elif tag == "a":
            return ("a", len(writer.parts), _link_target(node.attributes.get("href")))
        return tag

    def leave(self, state: Any, parent: _Style) -> None:
        writer = self.writer
        if isinstance(state, tuple):
            self.link(state[1], state[2])
        elif state in _STRONG or state in _EMPHASIS:
            writer.mark("**" if state in _STRONG else "_")
        elif state in _PARAGRAPHS or state in _HEADINGS:
            writer.breaks(2)
        elif state in _BLOCKS:
            writer.breaks(1)
        writer.prefix = "> " * parent.quotes

    def link(self, start: int, target: str | None) -> None:
        if target is None:
            return
        shown = self.writer.since(start)
        self.result.links.append((shown, target))
        if not _same_target(shown, target):
            self.writer.write((" " if shown else "") + f"<{target}>")


def _first_colour(background: str | None) -> str | None:
    if not background:
        return None
    found = re.search(r"#[0-9a-f]{3,8}\b|rgba?\([^)]*\)|\b[a-z]+\b", background)
    return found.group(0) if found else None


def _alike(colour: Colour, background: Colour) -> bool:
    return (
        abs(colour[0] - background[0]) <= SAME_COLOUR
        and abs(colour[1] - background[1]) <= SAME_COLOUR
        and abs(colour[2] - background[2]) <= SAME_COLOUR
    )


def _link_target(href: str | None) -> str | None:
    """What a link's `href` points at, on one line and without angle brackets; None for none or an in-page anchor."""
    if href is None:
        return None
    target = re.sub(r"[\x00-\x20\x7f<>]", lambda c: f"%{ord(c.group(0)):02X}", href.strip())
    if not target or target.startswith("#"):
        return None
    return target if len(target) <= MAX_LINK_CHARS else target[:MAX_LINK_CHARS] + "…"


def _same_target(shown: str, target: str) -> bool:
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


def _stylesheet_declarations(tree: LexborHTMLParser) -> dict[int, dict[str, str]]:
    """The declarations top-level rules of `<style>` elements give each element (by node id), later rules
    winning; only `_SHEET_PROPERTIES`, and at most `MAX_STYLE_RULES` selectors in all."""
    found: dict[int, dict[str, str]] = {}
    rules = 0
    for sheet in tree.css("style"):
        for selectors, block in _top_level_rules(sheet.text(deep=True) or ""):
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


def _top_level_rules(css: str) -> list[tuple[str, str]]:
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


def convert_html(html: str) -> Converted:
    """The text a person sees of `html`, with what was hidden, the links and the images counted."""
    tree = LexborHTMLParser(bounded_html(html) if nests_too_deep(html) else html)
    return _Converter(tree).convert(tree.root or tree.body)  # type: ignore[arg-type]


def html_to_text(html: str) -> str:
    """The text a person sees of `html` (see `convert_html`)."""
    return convert_html(html).text + "\n"
