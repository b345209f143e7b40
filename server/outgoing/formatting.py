"""The body of an outgoing message: plain text, or Markdown or HTML sent as HTML with a plain-text alternative; the
account's signature below it; and, for a reply or an inline forward, the other message's text below that.

Markdown is rendered by markdown-it-py (CommonMark, raw HTML in it escaped, not passed through); HTML, the caller's
or Markdown's, is cleaned by nh3 (the Ammonia sanitizer): no script, no style, no event handler, no image, no
element that loads anything. Remote resources are always removed; there is no setting to keep them, so a message
never tells its sender when, where or whether it was read. The text alternative is made from the same cleaned HTML
by the reader's own converter (`reading.html_text.html_to_text`), so it says what the HTML part shows.

The signature (SMTP_SIGNATURE, plain text) goes below the caller's text after the standard `-- ` line; in the HTML
part as that text escaped, its lines joined by `<br>`. Text quoted from another message (`Quoted`) goes last: in the
HTML part, escaped, inside `<blockquote type="cite">`.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Literal

import anyio.to_thread
import nh3
from markdown_it import MarkdownIt

from ..reading.html_text import html_to_text

BodyFormat = Literal["text", "markdown", "html"]
#: the signature separator line (RFC 3676 §4.3): dash, dash, space
SIGNATURE_SEPARATOR = "-- "
#: elements kept in a formatted body: nh3's safe set without `img` (every image would be a remote resource)
_KEPT_TAGS = frozenset(nh3.ALLOWED_TAGS) - {"img"}
_FORMAT_NAMES: dict[BodyFormat, str] = {"text": "plain text", "markdown": "Markdown", "html": "HTML"}


@dataclass(frozen=True)
class Quoted:
    """Another message's text placed below the body (a reply's quote, an inline forward's original), as text and as
    HTML; written by that message's sender, never by the caller."""

    text: str
    html: str
    lines: int
    cut: bool = False


@dataclass(frozen=True)
class Layout:
    """What a body is made of, for the question a person answers."""

    format: BodyFormat = "text"
    #: characters of the caller's own text (as its text alternative has them)
    written_chars: int = 0
    #: characters of the signature added (0: none)
    signature_chars: int = 0
    #: lines quoted from another message (0: none), and whether the quote was cut
    quoted_lines: int = 0
    quoted_cut: bool = False

    def describe(self, what: str = "Body") -> list[str]:
        """The question's lines about the body: never the text itself, never raw HTML."""
        kind = _FORMAT_NAMES[self.format]
        lines = [f"{what}, as written by the assistant: {self.written_chars} characters of {kind}"]
        if self.format != "text":
            lines[0] += (
                ", sent as HTML beside a plain-text alternative (the text counted here); scripts, images and "
                "anything remote removed"
            )
        lines[0] += "."
        if self.signature_chars:
            lines.append(f"Below it: this account's signature ({self.signature_chars} characters, SMTP_SIGNATURE).")
        if self.quoted_lines:
            cut = ", cut short" if self.quoted_cut else ""
            lines.append(
                f"Below that: {self.quoted_lines} lines quoted from the original message{cut}, written by its sender, "
                "not by the assistant (not shown here)."
            )
        return lines


@dataclass(frozen=True)
class Body:
    """The text part, the HTML part (None for a plain-text message) and what they are made of."""

    text: str
    html: str | None
    layout: Layout


def clean_html(html: str) -> str:
    """`html` with nothing that runs or loads: nh3's safe elements and attributes, images removed, links with
    `rel="noopener noreferrer"`."""
    return nh3.clean(html, tags=set(_KEPT_TAGS), link_rel="noopener noreferrer")


def _rendered(written: str, body_format: BodyFormat) -> str:
    if body_format == "markdown":
        return clean_html(MarkdownIt("commonmark", {"html": False}).render(written))
    return clean_html(written)


def _html_lines(text: str) -> str:
    """Plain text as HTML: escaped, each line ending in `<br>`."""
    return "<br>\n".join(escape(line, quote=False) for line in text.splitlines())


def as_quoted(text: str, cut: bool = False) -> Quoted:
    """Text already written as a quote (`> ` lines, header lines above them) as `Quoted`; its HTML form keeps every
    line as it is, escaped."""
    return Quoted(text=text, html=f"<div>{_html_lines(text)}</div>", lines=len(text.splitlines()), cut=cut)


def compose_body(
    written: str, body_format: BodyFormat, signature: str | None = None, quoted: Quoted | None = None
) -> Body:
    """The body of `written` (in `body_format`), with `signature` and then `quoted` below it.

    A plain-text body with neither is `written` exactly as given."""
    html_parts: list[str] = []
    if body_format == "text":
        text = written
    else:
        cleaned = _rendered(written, body_format)
        html_parts.append(f"<div>{cleaned}</div>")
        text = html_to_text(cleaned) if cleaned.strip() else ""
    written_chars = len(text)
    below: list[str] = []
    if signature:
        below.append(f"{SIGNATURE_SEPARATOR}\n{signature}")
        html_parts.append(f'<div class="signature">{SIGNATURE_SEPARATOR}<br>\n{_html_lines(signature)}</div>')
    if quoted is not None:
        below.append(quoted.text.rstrip("\n"))
        html_parts.append(quoted.html)
    if below:
        text = "\n\n".join(([text.rstrip("\n")] if text.strip() else []) + below) + "\n"
    html = None
    if body_format != "text":
        html = '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n' + "\n".join(html_parts)
        html += "\n</body></html>\n"
    layout = Layout(
        format=body_format,
        written_chars=written_chars,
        signature_chars=len(signature or ""),
        quoted_lines=quoted.lines if quoted else 0,
        quoted_cut=quoted.cut if quoted else False,
    )
    return Body(text=text, html=html, layout=layout)


async def composed(
    written: str, body_format: BodyFormat, signature: str | None = None, quoted: Quoted | None = None
) -> Body:
    """`compose_body` in a worker thread: rendering and cleaning a large body takes seconds, which would stall
    every other call on the event loop."""
    return await anyio.to_thread.run_sync(compose_body, written, body_format, signature, quoted)
