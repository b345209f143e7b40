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

from .html_bounds import bounded_html, nests_too_deep
from .html_styles import (
    TINY_FONT_PX,
    WHITE,
    Colour,
    alike,
    colour_of,
    declarations,
    first_colour,
    has_image,
    hiding,
    length_px,
    link_target,
    same_target,
    stylesheet_declarations,
)

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
_MARKDOWN_IMAGE = re.compile(r"!\[")


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


class _Converter:
    def __init__(self, tree: LexborHTMLParser) -> None:
        self.result = Converted(text="")
        self.writer = _Writer()
        self.sheet = stylesheet_declarations(tree)
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
        colour = colour_of(style.get("color")) or (
            colour_of(attributes.get("color"))
            if tag == "font"
            else colour_of(attributes.get("text"))
            if tag == "body"
            else None
        )
        background: Colour | None = (
            colour_of(style.get("background-color"))
            or colour_of(first_colour(style.get("background")))
            or colour_of(attributes.get("bgcolor"))
        )
        image = has_image(style, attributes)
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
            px = length_px(size)
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
                if style.colour is not None and style.background is not None and alike(style.colour, style.background)
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
        width = length_px(style.get("width") or attributes.get("width") or "")
        height = length_px(style.get("height") or attributes.get("height") or "")
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
            return ("a", len(writer.parts), link_target(node.attributes.get("href")))
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
        if not same_target(shown, target):
            self.writer.write((" " if shown else "") + f"<{target}>")


def convert_html(html: str) -> Converted:
    """The text a person sees of `html`, with what was hidden, the links and the images counted."""
    tree = LexborHTMLParser(bounded_html(html) if nests_too_deep(html) else html)
    return _Converter(tree).convert(tree.root or tree.body)  # type: ignore[arg-type]


def html_to_text(html: str) -> str:
    """The text a person sees of `html` (see `convert_html`)."""
    return convert_html(html).text + "\n"
