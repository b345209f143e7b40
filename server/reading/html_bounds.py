"""Bounds on HTML before it is parsed, so the parser's time stays linear in the input whatever it holds.

An HTML5 parser checks the stack of open elements at many tags, so its time grows with length times depth:
200 KB of `<div>` took seconds. `nests_too_deep` tells cheaply whether a text may nest deeper than
`MAX_DEPTH`; `bounded_html` then rewrites it in one pass (every search bounded by `MAX_TAG` characters):
complete tags are kept, comments and declarations dropped, every other `<` becomes `&lt;`, and elements
nested deeper than `MAX_DEPTH` are read as if they were not nested any further (their start and end tags
are dropped, their text kept).
"""

from __future__ import annotations

import re
from collections import Counter

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
