"""A reply's quote of the message it answers, as a mail client writes it: "On <date>, <name> wrote:" and the
original's text in `> ` lines (in the HTML part, a `<blockquote type="cite">`).

The text quoted is the text `get_message` shows for the body (`reading.reader`: the plain-text part, or the HTML
converted, invisible characters and hidden text removed), read without marking the message read. It was written by
the original's sender: the person approving is told how many lines of it are quoted and that the assistant did not
write them. A quote is bounded (`MAX_QUOTED_LINES`, `MAX_QUOTED_CHARS`); a longer text ends in `CUT_MARKER`.
"""

from __future__ import annotations

import re
from email.utils import getaddresses
from html import escape

from ..imap.lookup import MessageSelection
from ..imap.pool import Examined, ImapPool, InMailbox
from ..imap.session import Session
from ..reading.reader import fetch_message, message_content
from .compose import CONTROL_CHARACTERS
from .formatting import Quoted

MAX_QUOTED_LINES = 200
MAX_QUOTED_CHARS = 20_000
CUT_MARKER = "[quoted text cut]"
_CONTROLS = re.compile(f"[{CONTROL_CHARACTERS}]+")


def _one_line(text: str) -> str:
    return _CONTROLS.sub(" ", text).strip()


def attribution(date: str, sender: str) -> str:
    """`On <date>, <name> wrote:`, the name (else the address) of the first From address, as one line."""
    pairs = getaddresses([sender])
    name, address = pairs[0] if pairs else ("", "")
    who = _one_line(name or address) or "the sender"
    when = _one_line(date)
    return f"On {when}, {who} wrote:" if when else f"{who} wrote:"


def reply_quote(date: str, sender: str, text: str, truncated: bool = False) -> Quoted:
    """The quote of a message from `sender` sent on `date` whose body reads `text`, bounded."""
    lines = text.replace("\x00", "").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    kept: list[str] = []
    size = 0
    for line in lines[:MAX_QUOTED_LINES]:
        size += len(line) + 1
        if size > MAX_QUOTED_CHARS:
            break
        kept.append(line)
    cut = truncated or len(kept) < len(lines)
    if cut:
        kept.append(CUT_MARKER)
    head = attribution(date, sender)
    quoted_text = "\n".join([head, *(f"> {line}" if line else ">" for line in kept)])
    body_html = "<br>\n".join(escape(line, quote=False) for line in kept)
    html = f'<div class="quote">{escape(head, quote=False)}<br>\n<blockquote type="cite">{body_html}</blockquote></div>'
    return Quoted(text=quoted_text, html=html, lines=len(kept), cut=cut)


def read_quote(client: Session, examined: Examined, target: MessageSelection) -> Quoted:
    """The quote of the message `target` names, its text as `get_message` shows it (not marked read)."""
    content = message_content(fetch_message(client, examined, target, MAX_QUOTED_CHARS), MAX_QUOTED_CHARS)
    return reply_quote(content.headers.date, content.headers.sender, content.body.text, content.truncated)


async def quote_of(pool: ImapPool, target: MessageSelection, wanted: bool) -> Quoted | None:
    """The quote of the message `target` names (read in its mailbox through `pool`), when `wanted`."""
    if not wanted:
        return None
    return await pool.run(InMailbox(target.mailbox, lambda c, examined: read_quote(c, examined, target)))
