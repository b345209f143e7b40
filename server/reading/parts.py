"""A message's MIME structure, read from IMAP BODYSTRUCTURE without downloading the message.

`parse_structure` turns imapclient's BODYSTRUCTURE into `Part`s (leaves, with IMAP part ids such
as "1" or "2.1"). `body_alternatives` finds the parts a person would read (text/plain, text/html, or
both as the choices of a multipart/alternative), `body_part` picks one of them, `attachments` lists
the rest. `decode_body` turns the raw (possibly partial) bytes of a part into text, and
`decoded_stream` decodes a part fetched in pieces, so neither ever needs the whole message.
"""

from __future__ import annotations

import binascii
import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from typing import Any
from urllib.parse import unquote_to_bytes

from .media_types import declared_if_reduced, media_type

#: bytes per base64 line with its CRLF, and the bytes it carries
_B64_LINE, _B64_DATA = 78, 57


@dataclass(frozen=True)
class Part:
    """One leaf of a message: what it is, how it is encoded, how big it is on the server."""

    part_id: str
    content_type: str  #: e.g. "text/plain", lower case
    params: dict[str, str] = field(default_factory=dict)
    encoding: str = "7bit"
    size: int = 0  #: encoded size on the server, in bytes
    disposition: str | None = None
    filename: str | None = None
    #: the size once decoded, where it was counted (`part_sizes.with_decoded_sizes`)
    exact_size: int | None = None

    @property
    def media_type(self) -> str:
        """The type as a result shows it: `content_type` when well-formed, else application/octet-stream."""
        return media_type(self.content_type)

    @property
    def declared_type(self) -> str | None:
        """`content_type` when `media_type` does not show it (fenced beside it), else None."""
        return declared_if_reduced(self.content_type)

    @property
    def charset(self) -> str | None:
        """The declared charset, or None when the part declares none."""
        return self.params.get("charset") or None

    @property
    def decoded_size(self) -> int:
        """The size once the transfer encoding is undone: exact for 7bit/8bit/binary and where counted
        (`exact_size`), else an estimate (close for base64)."""
        if self.exact_size is not None:
            return self.exact_size
        if self.encoding == "base64":
            return self.size * _B64_DATA // _B64_LINE
        return self.size

    @property
    def is_attachment(self) -> bool:
        if self.disposition == "attachment" or self.content_type == "message/rfc822":
            return True
        if self.content_type in ("text/plain", "text/html"):
            return self.filename is not None and self.disposition != "inline"
        return not self.content_type.startswith("multipart/")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def decode_words(value: bytes | str | None) -> str:
    """A header value with RFC 2047 encoded words decoded (raw UTF-8 is accepted too)."""
    text = _text(value)
    if "=?" not in text:
        return text
    try:
        return str(make_header(decode_header(text)))
    except (ValueError, LookupError, HeaderParseError):  # broken base64, unknown charsets: shown as written
        return text


def _param_dict(raw: Any) -> dict[str, str]:
    """IMAP's flat `(k1 v1 k2 v2)` parameter list, with RFC 2231 continuations and charsets resolved."""
    if not isinstance(raw, tuple | list):
        return {}
    pairs = [(_text(raw[i]).lower(), _text(raw[i + 1])) for i in range(0, len(raw) - 1, 2)]
    merged: dict[str, list[tuple[int, bool, str]]] = {}
    plain: dict[str, str] = {}
    for key, value in pairs:
        match = re.fullmatch(r"([^*]+)\*(\d+)?(\*)?", key)
        if match is None:
            plain[key] = value
            continue
        name, index, star = match.group(1), match.group(2), match.group(3)
        extended = star is not None or index is None
        merged.setdefault(name, []).append((int(index or 0), extended, value))
    for name, pieces in merged.items():
        pieces.sort()
        if any(extended for _, extended, _ in pieces):
            plain[name] = _rfc2231("".join(v for _, _, v in pieces))
        else:
            plain[name] = "".join(v for _, _, v in pieces)
    return {key: decode_words(value) for key, value in plain.items()}


def _rfc2231(value: str) -> str:
    """`utf-8''%C3%9Cbersicht.txt` -> `Übersicht.txt` (charset, language, percent-encoded text)."""
    charset, language, text = value.split("'", 2) if value.count("'") >= 2 else ("", "", value)
    del language
    return unquote_to_bytes(text).decode(_codec(charset or "utf-8"), "replace")


def _disposition(raw: Any) -> tuple[str | None, dict[str, str]]:
    if isinstance(raw, tuple | list) and raw:
        return _text(raw[0]).lower() or None, _param_dict(raw[1] if len(raw) > 1 else None)
    return None, {}


def _leaf(node: Any, part_id: str) -> Part:
    maintype, subtype = _text(node[0]).lower(), _text(node[1]).lower()
    content_type = f"{maintype}/{subtype}"
    # extension data follows the basic fields: text/* has a line count, message/rfc822 an
    # envelope, a body and a line count; then MD5 and the disposition
    extension = 9 if maintype == "text" else 11 if content_type == "message/rfc822" else 8
    disposition, disposition_params = _disposition(node[extension] if len(node) > extension else None)
    params = _param_dict(node[2])
    filename = disposition_params.get("filename") or params.get("name")
    return Part(
        part_id=part_id,
        content_type=content_type,
        params=params,
        encoding=_text(node[5]).lower() or "7bit",
        size=int(node[6] or 0),
        disposition=disposition,
        filename=filename or None,
    )


@dataclass(frozen=True)
class Node:
    """A multipart container or a leaf, as in the BODYSTRUCTURE tree."""

    subtype: str | None  #: "mixed", "alternative", …; None for a leaf
    children: tuple[Node, ...] = ()
    part: Part | None = None


def parse_structure(bodystructure: Any, part_id: str = "") -> Node:
    """The tree of a BODYSTRUCTURE; a single-part message's only part is "1", as IMAP numbers it."""
    if isinstance(bodystructure[0], list):
        prefix = f"{part_id}." if part_id else ""
        children = tuple(parse_structure(child, f"{prefix}{n}") for n, child in enumerate(bodystructure[0], start=1))
        return Node(_text(bodystructure[1]).lower(), children)
    return Node(None, part=_leaf(bodystructure, part_id or "1"))


def leaves(node: Node) -> Iterator[Part]:
    if node.part is not None:
        yield node.part
    for child in node.children:
        yield from leaves(child)


READABLE_TYPES = ("text/plain", "text/html")


def body_alternatives(node: Node) -> tuple[Part, ...]:
    """The text parts that are each the whole body a person would read, in the message's order: one, or the
    text/plain and text/html choices of a multipart/alternative (the first of each type); () when there is none.

    Only the choices of a multipart/alternative are equivalent. In multipart/mixed the first part that
    has a readable body is the body: an HTML message with a plain-text footer (as mailing lists add)
    shows the HTML, not the footer. Any other multipart (related, signed, …) is read through its first
    part, its root.
    """
    if node.part is not None:
        part = node.part
        return (part,) if part.content_type in READABLE_TYPES and not part.is_attachment else ()
    if node.subtype == "alternative":
        choices = [found for found in map(body_part, node.children) if found is not None]
        first_of_each = {part.content_type: part for part in reversed(choices)}
        return tuple(part for part in choices if first_of_each[part.content_type] is part)
    children = node.children if node.subtype == "mixed" else node.children[:1]
    return next((found for found in map(body_alternatives, children) if found), ())


def preferred(alternatives: tuple[Part, ...]) -> Part | None:
    """Of equivalent text parts, the plain text, else the first."""
    return next((part for part in alternatives if part.content_type == "text/plain"), next(iter(alternatives), None))


def body_part(node: Node) -> Part | None:
    """The text part a person would read: text/plain or text/html (converted to text), not an attachment; of a
    multipart/alternative's choices the plain text (`body_alternatives`)."""
    return preferred(body_alternatives(node))


def attachments(node: Node) -> list[Part]:
    return [part for part in leaves(node) if part.is_attachment]


def fetch_budget(part: Part, max_chars: int) -> int:
    """Bytes of `part` to fetch so that `max_chars` characters surely arrive (capped by the part's size).

    A character is at most 4 bytes of UTF-8; quoted-printable triples that, base64 adds a third,
    and HTML needs room for its markup.
    """
    per_char = {"quoted-printable": 12, "base64": 6}.get(part.encoding, 4)
    if part.content_type == "text/html":
        per_char *= 3
    return min(part.size, max_chars * per_char + 1024)


def _quanta(segment: bytes, final: bool) -> tuple[bytes, bytes]:
    """(the bytes of the whole 4-character groups of `segment`, the characters left over).

    With `final`, two or three left-over characters are decoded as if padded, and a single one,
    which carries no whole byte, is dropped.
    """
    usable = len(segment) - len(segment) % 4
    decoded, rest = binascii.a2b_base64(segment[:usable]), segment[usable:]
    if not final:
        return decoded, rest
    return decoded + (binascii.a2b_base64(rest + b"=" * (4 - len(rest))) if len(rest) >= 2 else b""), b""


def _base64_decoded(data: bytes, final: bool) -> tuple[bytes, bytes]:
    """(the bytes the base64 in `data` carries, the characters held back for the next piece).

    Lenient, as mail readers are, so broken base64 never fails a read: whatever is not in the
    alphabet is skipped (line breaks, spaces), and padding ends a run wherever it stands (as
    when encoded pieces were glued together), even when the run before it is of the wrong length.
    """
    compact = re.sub(rb"[^A-Za-z0-9+/=]", b"", data)
    *closed, still_open = compact.split(b"=")
    decoded = b"".join(_quanta(run, final=True)[0] for run in closed)
    last, rest = _quanta(still_open, final)
    return decoded + last, rest


def _undo_transfer_encoding(data: bytes, encoding: str, complete: bool) -> bytes:
    if encoding == "base64":
        return _base64_decoded(data, final=complete)[0]
    if encoding == "quoted-printable":
        if not complete:
            cut = data.rfind(b"=", max(0, len(data) - 2))
            data = data[:cut] if cut >= 0 else data
        return binascii.a2b_qp(data)
    return data


#: codecs Python counts as text encodings that are no charset of any mail: they raise on every input,
#: or read escapes and Punycode (whose decoder is quadratic) instead of characters
_NOT_CHARSETS = frozenset({"undefined", "idna", "punycode", "unicode-escape", "raw-unicode-escape"})


def _codec(charset: str) -> str:
    """The Python codec for a charset a message declares; "utf-8" for one that is unknown or no text encoding.

    Only codecs that turn bytes into text are used: a "charset" naming base64, zlib, bz2, rot13, …
    (codecs Python also knows, some of them decompressing) is treated as unknown, so nothing is ever
    decompressed or reinterpreted through a charset.
    """
    try:
        name = codecs.lookup(charset).name
        b"\x00".decode(name, "ignore")  # refuses (LookupError) any codec that is not a text encoding
    except (LookupError, ValueError):  # ValueError: a name with a NUL byte
        return "utf-8"
    return "utf-8" if name in _NOT_CHARSETS else name


def _guessed_text(raw: bytes, complete: bool) -> str:
    """Text of a part that declares no charset (or US-ASCII): UTF-8 when the bytes are valid UTF-8, else Windows-1252.

    RFC 2045's default, US-ASCII, would turn every 8-bit byte into "�", and undeclared 8-bit text is
    in practice UTF-8 or, from older mailers, Windows-1252 (a superset of Latin-1's printable range).
    ASCII is valid UTF-8, so a part that really is US-ASCII reads the same either way.
    """
    try:
        return codecs.getincrementaldecoder("utf-8")(errors="strict").decode(raw, final=complete)
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def decode_body(data: bytes, part: Part, complete: bool) -> str:
    """Text from the raw bytes of `part`; with `complete=False` a cut-off character at the end is dropped."""
    raw = _undo_transfer_encoding(data, part.encoding, complete)
    if part.charset is None or _codec(part.charset) == "ascii":
        text = _guessed_text(raw, complete)
    else:
        try:
            text = codecs.getincrementaldecoder(_codec(part.charset))(errors="replace").decode(raw, final=complete)
        except UnicodeError:  # e.g. UTF-32/UTF-16 without a byte-order mark: read as if no charset were declared
            text = _guessed_text(raw, complete)
    return text.replace("\r\n", "\n")


def decoded_stream(chunks: Iterator[bytes], encoding: str) -> Iterator[bytes]:
    """Undo a transfer encoding over raw pieces of a part, holding back only a few bytes at a time."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        if encoding == "base64":
            decoded, pending = _base64_decoded(pending, final=False)
            yield decoded
        elif encoding == "quoted-printable":
            cut = pending.rfind(b"\n") + 1
            yield binascii.a2b_qp(pending[:cut])
            pending = pending[cut:]
        else:
            yield pending
            pending = b""
    if pending:
        yield _undo_transfer_encoding(pending, encoding, complete=True)
