"""HTML, SVG and XML that act when opened: held back like programs.

A web page or an SVG image opened from a mail runs in a browser (or the system's viewer) with whatever script it
carries: HTML smuggling writes a program to disk, a login form posts a password elsewhere. So an attachment that is
markup (by its name, its declared type, or a first byte `<`) is active when its text holds, anywhere:

- a `<script>`, an embedded document or plug-in (`iframe`, `frame`, `object`, `embed`, `applet`, `portal`), SVG's
  `foreignObject` (HTML inside an image), `handler` or `listener` elements, with or without a namespace prefix
  (`<svg:script>`), in any case;
- an event handler attribute (`onload=`, `onerror=`, `<svg/onload=…>`);
- a `javascript:`, `vbscript:` or `livescript:` URL, after character references are decoded
  (`&#106;avascript:`, with any number of leading zeros) and tabs and line breaks removed, as a browser reads a URL;
- a `<meta http-equiv=refresh>` (it goes elsewhere without a click), an XML entity declaration (`<!ENTITY`, which
  can expand to any markup, so the markup above cannot be read in the text) or an `<?xml-stylesheet?>` (an XSLT
  sheet writes the page).

The scan reads text, not a document tree, so it errs on the side of holding back (a page that only talks about
`<script>` in its text is held back too). The bytes are read as a browser may decode them: UTF-16 and UTF-32 by
their byte order mark (or by the NULs of `<` in UTF-16), else byte by byte after any UTF-8 byte order mark (every
ASCII-compatible charset spells markup alike), with ISO-2022 escape sequences dropped (`<scr ESC(B ipt>` is
`<script>` to an ISO-2022-JP decoder). A gzip-compressed SVG (`.svgz`) is decompressed first. Markup larger than
`MAX_MARKUP_BYTES` (decompressed) is not read and held back as too large to check.
"""

from __future__ import annotations

import codecs
import html
import re
import zlib

#: name endings and declared types of markup a browser or viewer renders with its script
MARKUP_ENDINGS = frozenset({"html", "htm", "xhtml", "xht", "shtml", "shtm", "svg", "svgz", "xml", "xsl", "xslt"})
MARKUP_TYPES = frozenset(
    {"text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml", "text/xsl"}
)
#: the most bytes of markup read (decompressed); beyond it the markup is held back unread
MAX_MARKUP_BYTES = 16 * 1024 * 1024
RULE = "rule active-markup"

_ELEMENTS = re.compile(
    r"<(?:[a-z_][\w.-]*:)?(script|iframe|frame|frameset|object|embed|applet|portal|foreignobject|handler|listener)"
    r"[\s/>]",
    re.IGNORECASE,
)
_HANDLER = re.compile(r"[\s\"'/](on[a-z]+)\s*=", re.IGNORECASE)
_SCRIPT_URL = re.compile(r"(java|vb|live)script:", re.IGNORECASE)
_REFRESH = re.compile(r"<meta\b[^>]*http-equiv\s*=\s*[\"']?\s*refresh", re.IGNORECASE)
_DECLARATIONS = re.compile(r"<!ENTITY|<\?xml-stylesheet", re.IGNORECASE)
#: ISO 2022 escape sequences: ESC, intermediate bytes, a final byte
_ESCAPES = re.compile("\x1b[\x20-\x2f]*[\x30-\x7e]?")
_URL_SPACES = str.maketrans("", "", "\t\n\r")
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_GZIP = b"\x1f\x8b"


def is_markup(endings: list[str], declared_type: str | None, start: bytes) -> bool:
    """Whether a part is markup: by its name's last ending, its declared type, or a first `<` (after a byte order
    mark and white space, in any of the encodings `markup_text` reads)."""
    kind = (declared_type or "").split(";", 1)[0].strip().lower()
    if (endings and endings[-1] in MARKUP_ENDINGS) or kind in MARKUP_TYPES:
        return True
    return markup_text(start[:256]).lstrip().startswith("<")


def markup_text(data: bytes) -> str:
    """`data` as text a scan for markup can read (see the module docstring)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, "replace")
    if data[:1] == b"\x00" and data[1:2] == b"<":
        return data.decode("utf-16-be", "replace")
    if data[:1] == b"<" and data[1:2] == b"\x00":
        return data.decode("utf-16-le", "replace")
    return _ESCAPES.sub("", data.removeprefix(codecs.BOM_UTF8).decode("latin-1"))


def markup_reason(data: bytes, whole: bool = True) -> str | None:
    """Why markup `data` acts when opened (its rule and what was found), or None; `whole`: `data` is the whole part
    (a part too large to read whole is held back)."""
    if data.startswith(_GZIP):
        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, MAX_MARKUP_BYTES + 1)
        except zlib.error:
            return f"{RULE}: it is compressed markup that cannot be decompressed, so it cannot be checked for script"
    if len(data) > MAX_MARKUP_BYTES and whole:
        return f"{RULE}: it is markup over {MAX_MARKUP_BYTES // (1024 * 1024)} MiB, too large to check for script"
    return _found(markup_text(data[:MAX_MARKUP_BYTES]))


def _found(text: str) -> str | None:
    element = _ELEMENTS.search(text)
    if element:
        return f"{RULE}: it is HTML or SVG with a <{element.group(1).lower()}> element, which runs when opened"
    handler = _HANDLER.search(text)
    if handler:
        return f"{RULE}: it is HTML or SVG with an event handler ({handler.group(1).lower()}=), which runs script"
    if _REFRESH.search(text):
        return f"{RULE}: it is HTML that goes to another address when opened (meta refresh)"
    if _DECLARATIONS.search(text):
        return f"{RULE}: it is XML with entity declarations or a style sheet, which can hide or write script"
    url = _SCRIPT_URL.search(html.unescape(text).translate(_URL_SPACES))
    if url:
        return f"{RULE}: it is HTML or SVG with a {url.group(1).lower()}script: link, which runs script"
    return None
