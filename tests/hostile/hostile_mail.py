"""Hypothesis strategies for hostile mail: raw messages as anyone on the Internet could send them.

They vary what the parsers of a mail reader trust: MIME structure (nesting, missing and
duplicate boundaries, message/rfc822 inside, many parts), headers (encoded words in every
charset and codec name, raw 8-bit bytes, long address lists, garbage dates), parameters
(RFC 2231 charsets, continuations with absurd or missing indexes), charsets (real ones, codecs
Python knows that are no charset, names that are no codec at all), transfer encodings (broken
base64 and quoted-printable, unknown ones) and bodies (HTML tag soup and deep nesting).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from hypothesis import strategies as st

#: real charsets, codecs that are not charsets (some decompress), and names that are no codec
CHARSETS = (
    "utf-8",
    "us-ascii",
    "iso-8859-1",
    "windows-1252",
    "utf-16",
    "utf-32",
    "utf-7",
    "shift_jis",
    "iso-2022-jp",
    "gb18030",
    "koi8-r",
    "zlib",
    "bz2",
    "base64",
    "hex",
    "rot13",
    "uu",
    "quopri",
    "undefined",
    "idna",
    "punycode",
    "unicode_escape",
    "raw_unicode_escape",
    "mbcs",
    "x-unknown",
    "",
    "utf-8'en'",
    "a" * 300,
)
TRANSFER_ENCODINGS = ("7bit", "8bit", "binary", "base64", "quoted-printable", "x-uuencode", "BASE64", "x-garbage")
CONTENT_TYPES = (
    "text/plain",
    "text/html",
    "text/enriched",
    "application/octet-stream",
    "image/png",
    "message/rfc822",
    "message/delivery-status",
    "x/y",
    "text",
    "",
)
MULTIPART_SUBTYPES = ("mixed", "alternative", "related", "signed", "digest", "x-unknown")
HTML_PIECES = (
    "<ul>",
    "<ol>",
    "<li>",
    "</ul>",
    "<blockquote>",
    "</blockquote>",
    "<dl><dd>",
    "<pre>",
    "</pre>",
    "<table><tr><td>",
    "<p>",
    "<a href='http://x'>",
    "</a>",
    "<a",
    "<!--",
    "-->",
    "</",
    "<?",
    "<!",
    "&",
    "&#",
    "&amp;",
    "&#x110000;",
    "<script>",
    "<style>",
    "<b>",
    "<br>",
    "<img src=x>",
    "text",
    "\n",
    " ",
    "Grüße",
    "<",
    ">",
    '"',
)

_HEADER_SAFE = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="\r\n")
_TOKEN = st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=1, max_size=20)
_ENCODED_PAYLOAD = st.text(alphabet=string.ascii_letters + string.digits + "=_+/-%.", max_size=60)


def encoded_words() -> st.SearchStrategy[str]:
    return st.builds(
        lambda charset, kind, payload: f"=?{charset}?{kind}?{payload}?=",
        st.sampled_from(CHARSETS),
        st.sampled_from("QqBbX"),
        _ENCODED_PAYLOAD,
    )


def header_values() -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.text(_HEADER_SAFE, max_size=80), encoded_words()), max_size=4).map(" ".join)


def addresses() -> st.SearchStrategy[str]:
    one = st.one_of(
        st.builds(lambda box, host: f"{box}@{host}", _TOKEN, _TOKEN),
        st.builds(lambda name, box: f'"{name}" <{box}@example.net>', header_values(), _TOKEN),
        st.builds(lambda name, box: f"{name} <{box}@example.net>", encoded_words(), _TOKEN),
        st.just("undisclosed-recipients:;"),
        st.just("<>"),
        st.text(_HEADER_SAFE, max_size=40),
    )
    few = st.lists(one, max_size=5).map(", ".join)
    many = st.builds(lambda n: ", ".join(f"p{i}@example.net" for i in range(n)), st.integers(100, 1000))
    return st.one_of(few, few, many)


def parameters() -> st.SearchStrategy[str]:
    """`; name=value` pieces: plain, quoted, RFC 2231 extended, continued, broken."""
    name = st.sampled_from(("charset", "name", "filename", "boundary", "format", "x"))
    value = st.text(_HEADER_SAFE, max_size=40)
    percent = st.text(alphabet=string.ascii_letters + "%0123456789ABCDEF'", max_size=40)
    index = st.one_of(st.integers(0, 5), st.integers(0, 10**25))
    one = st.one_of(
        st.builds(lambda k, v: f'{k}="{v}"', name, value),
        st.builds(lambda k, v: f"{k}={v}", name, _TOKEN),
        st.builds(lambda k, c, v: f"{k}*={c}''{v}", name, st.sampled_from(CHARSETS), percent),
        st.builds(lambda k, i, v: f"{k}*{i}*={v}", name, index, percent),
        st.builds(lambda k, i, v: f'{k}*{i}="{v}"', name, index, value),
        st.builds(lambda k: f"{k}*=", name),
        st.just(";;;"),
    )
    return st.lists(one, max_size=5).map(lambda pieces: "".join(f"; {p}" for p in pieces))


def html_bodies() -> st.SearchStrategy[str]:
    soup = st.lists(st.sampled_from(HTML_PIECES), max_size=300).map("".join)
    nested = st.builds(lambda piece, n: piece * n, st.sampled_from(HTML_PIECES), st.integers(1, 1500))
    return st.lists(st.one_of(soup, nested), min_size=1, max_size=3).map("".join)


@dataclass(frozen=True)
class Leaf:
    content_type: str
    params: str
    encoding: str
    disposition: str
    body: bytes


@dataclass(frozen=True)
class Multipart:
    subtype: str
    boundary: str
    children: tuple[Leaf | Multipart, ...]
    closed: bool  #: whether the closing boundary is there


def _body_bytes(text: str, charset: str, encoding: str, junk: bytes) -> bytes:
    try:
        data = text.encode(charset or "utf-8")
    except (LookupError, UnicodeError, ValueError, TypeError):
        data = text.encode("utf-8")
    return data + junk if encoding != "base64" else data[: len(data) // 2] + b"!!==" + junk


def leaves() -> st.SearchStrategy[Leaf]:
    charset = st.sampled_from(CHARSETS)
    text = st.one_of(st.text(max_size=500), html_bodies())
    junk = st.binary(max_size=64)
    return st.builds(
        lambda content_type, params, charset, encoding, disposition, text, junk: Leaf(
            content_type,
            f"; charset={charset}{params}" if charset else params,
            encoding,
            disposition,
            _body_bytes(text, charset, encoding, junk),
        ),
        st.sampled_from(CONTENT_TYPES),
        parameters(),
        charset,
        st.sampled_from(TRANSFER_ENCODINGS),
        st.one_of(
            st.just(""), st.builds(lambda kind, p: kind + p, st.sampled_from(("attachment", "inline")), parameters())
        ),
        text,
        junk,
    )


def structures() -> st.SearchStrategy[Leaf | Multipart]:
    return st.recursive(
        leaves(),
        lambda children: st.builds(
            Multipart,
            st.sampled_from(MULTIPART_SUBTYPES),
            st.sampled_from(("B", "b", "=_x", "a" * 70, "")),
            st.lists(children, max_size=6).map(tuple),
            st.booleans(),
        ),
        max_leaves=25,
    )


def _clean(text: str) -> bytes:
    """Header text as raw UTF-8, with line breaks only where a header may fold."""
    return text.replace("\r", " ").replace("\n", " ").encode("utf-8", "surrogatepass")


def render(node: Leaf | Multipart) -> bytes:
    """The entity: its headers (Content-*), a blank line, its body."""
    if isinstance(node, Leaf):
        head = b"Content-Type: " + _clean(node.content_type + node.params) + b"\r\n"
        head += b"Content-Transfer-Encoding: " + node.encoding.encode() + b"\r\n"
        if node.disposition:
            head += b"Content-Disposition: " + _clean(node.disposition) + b"\r\n"
        return head + b"\r\n" + node.body.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") + b"\r\n"
    boundary = node.boundary.encode()
    head = b"Content-Type: multipart/" + node.subtype.encode() + b'; boundary="' + boundary + b'"\r\n\r\n'
    body = b"".join(b"--" + boundary + b"\r\n" + render(child) for child in node.children)
    return head + body + (b"--" + boundary + b"--\r\n" if node.closed else b"")


def messages() -> st.SearchStrategy[bytes]:
    """Whole raw messages (RFC 5322 headers, then a MIME structure) as they would be appended."""
    return st.builds(
        lambda sender, to, subject, date, extra, structure: (
            b"From: "
            + _clean(sender)
            + b"\r\nTo: "
            + _clean(to)
            + b"\r\nSubject: "
            + _clean(subject)
            + b"\r\nDate: "
            + _clean(date)
            + b"\r\nMIME-Version: 1.0\r\n"
            + b"".join(b"X-Extra: " + _clean(value) + b"\r\n" for value in extra)
            + render(structure)
        ),
        addresses(),
        addresses(),
        header_values(),
        st.one_of(st.just("Mon, 2 Nov 2026 09:00:00 +0000"), st.text(_HEADER_SAFE, max_size=40)),
        st.lists(header_values(), max_size=3),
        structures(),
    )


def many_addresses(count: int) -> bytes:
    """A message whose From holds `count` addresses (40,000 make its ENVELOPE one IMAP line over 1,000,000 bytes)."""
    addresses = ",\r\n ".join(f"person-{n:05d}@recipients.example.net" for n in range(count))
    return (
        f"From: {addresses}\r\nTo: demo@example.org\r\nSubject: forty thousand senders\r\n\r\nHello all.\r\n"
    ).encode()
