"""HTML mail as text, at a cost bounded by the size of the HTML whatever it holds.

Two things made the conversion superlinear, and both are taken away before html2text runs:

- Python's HTML parser (under html2text) rescans the rest of the input at every markup it
  cannot finish: 200 KB of `<a` took minutes. `well_formed` first rewrites the HTML in one pass
  (every search bounded by `MAX_TAG` characters): tags that are complete are kept as they are,
  comments and declarations are dropped (a browser shows neither), and every other `<` becomes
  `&lt;`, i.e. the text it is.
- html2text indents every line by its depth in nested lists and quotes, so its output grows with
  depth times length: 79 KB of nested `<ul><li>` became 243 million characters. Lists and quotes
  deeper than `MAX_NESTING` are read as if they were not nested any further (their text is kept,
  their tags ignored).

Time and output are then linear in the input, which the caller bounds (`fetch_budget`).
"""

from __future__ import annotations

import re
from collections import Counter

import html2text

#: the longest tag (with its attributes) kept; a longer one is read as text
MAX_TAG = 2048
#: a complete start or end tag: a name, then attributes (quoted, unquoted, or bare) separated by
#: spaces or slashes, or directly after a quoted value; possessive throughout, so no input makes
#: it backtrack
_TAG = re.compile(
    r"""</?[A-Za-z][A-Za-z0-9:-]*+"""
    r"""(?>(?:[\s/]++|(?<=["']))[^\s"'<>/=]++(?>\s*+=\s*+(?>"[^"]*+"|'[^']*+'|[^\s"'<>`]++))?+)*+"""
    r"""[\s/]*+>"""
)
_DECLARATION = re.compile(r"<[!?][^<>]*>")


def well_formed(html: str) -> str:
    """`html` with only complete tags left as markup: comments and declarations dropped, any other `<` as `&lt;`."""
    out: list[str] = []
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
        tag = _TAG.match(html, bracket, limit) or _DECLARATION.match(html, bracket, limit)
        if tag is None:
            out.append("&lt;")
            position = bracket + 1
        else:
            if tag.re is _TAG:
                out.append(tag.group(0))
            position = tag.end()
    return "".join(out)


#: deepest nesting of lists and quotes that is shown as such
MAX_NESTING = 12
_NESTING_TAGS = frozenset({"ul", "ol", "blockquote", "dl"})


class _NestingCap:
    """An html2text tag callback that ignores nesting tags beyond `MAX_NESTING`, and their end tags."""

    def __init__(self) -> None:
        self.depth = 0
        self.ignored: Counter[str] = Counter()  #: start tags ignored and not yet closed, per tag

    def __call__(self, converter: object, tag: str, attrs: object, start: bool) -> bool:
        if tag not in _NESTING_TAGS:
            return False
        if start:
            if self.depth >= MAX_NESTING:
                self.ignored[tag] += 1
                return True
            self.depth += 1
            return False
        if self.ignored[tag]:
            self.ignored[tag] -= 1
            return True
        self.depth = max(0, self.depth - 1)
        return False


def html_to_text(html: str) -> str:
    converter = html2text.HTML2Text()
    converter.body_width = 0  # keep paragraphs on one line; the reader wraps
    converter.ignore_images = True
    converter.tag_callback = _NestingCap()  # type: ignore[assignment]  # html2text types it as None only
    return converter.handle(well_formed(html)).strip() + "\n"
