"""Which text of a message `get_message` returns (`body_format`), and when a plain-text part is only a stub.

A message may offer its body twice, as text/plain and text/html (`parts.body_alternatives`). With
`auto` the plain text is returned unless it is a stub beside the HTML: the HTML's text is far longer
(`STUB_RATIO` times and `STUB_MIN_GAIN` characters more), or the plain text is essentially only a
"view this email in your browser" line (and its link) while the HTML says more. A short real message
("Yes, 3pm works.") is no stub: its HTML copy says no more. `text` and `html` return that part, else
the other one (`fallback`).

Deciding is bounded by sizes known from BODYSTRUCTURE before anything is fetched (`plan`): only a
plain part of at most `STUB_MAX_BYTES` can be a stub, and only then is the HTML fetched beside it (in
the same FETCH, and of it only as much as `max_chars` characters can need, at least `DECIDING_CHARS`);
a larger plain part is returned without looking at the HTML.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .parts import Part, fetch_budget, preferred

BodyFormat = Literal["auto", "text", "html"]
ChosenBecause = Literal["only one", "not a stub", "stub", "asked", "fallback", "no text"]
#: what `chosen_because` says, for the tool's description of the field
CHOSEN_BECAUSE = (
    "Why this text was returned: 'only one' (the message has only this text part), 'not a stub' (auto: the plain "
    "text is the whole message, preferred to the HTML), 'stub' (auto: the plain text only stands in for the HTML, "
    "e.g. a 'view this email in your browser' line, so the HTML was converted), 'asked' (body_format asked for "
    "it), 'fallback' (body_format asked for the other kind, which this message does not have), 'no text'."
)

#: a plain-text part larger than this (bytes on the server) is never taken for a stub
STUB_MAX_BYTES = 4096
#: the HTML's text must be this many times as long as the plain text for the plain text to be a stub …
STUB_RATIO = 4
#: … and longer by this many characters (also for a "view in browser" line): a short message and its HTML
#: copy never differ by that much
STUB_MIN_GAIN = 200
#: characters of the HTML fetched at least to decide, whatever max_chars (a newsletter's style sheet comes first)
DECIDING_CHARS = 5000
#: words a stub may hold besides its "view in browser" phrase and links ("Having trouble reading this email?")
STUB_SPARE_WORDS = 12

_LINK = re.compile(r"(?:https?://|www\.)\S+|<[^<>\s]+>|\[[^\[\]]*\]\([^()\s]*\)", re.IGNORECASE)
_WORD = re.compile(r"\w+")
#: "view this email in your browser" and the like in English, German, French, Spanish, Italian, Dutch and
#: Portuguese: a verb of looking or opening, a few words, then the browser, the web or "online"
_VIEW_IN_BROWSER = re.compile(
    r"\b(?:view|read|see|open|display|click|bekijk|lees)\w*\b[^.!?\n]{0,40}?"
    r"\b(?:browser|online|on the web|web\s?(?:page|version|site))\b"
    r"|\b(?:im|in\s+(?:ihrem|deinem|einem))\s+(?:web)?browser\b|\bonline[- ]?(?:version|ansicht|ansehen|lesen)\b"
    r"|\bweb[- ]?(?:version|ansicht|versie)\b|\bbrowser[- ]?ansicht\b|\bonline\s+bekijken\b"
    r"|\bversion\s+(?:en\s+ligne|web|online)\b|\bdans\s+(?:votre|le|un)\s+navigateur\b"
    r"|\b(?:en|tu|su|el|no|seu)\s+navegador\b|\bversi[oó]n\s+(?:web|online|en\s+l[ií]nea)\b"
    r"|\bversione\s+(?:web|online)\b|\bnel\s+(?:tuo\s+)?browser\b|\bvers[aã]o\s+(?:web|online)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Plan:
    """What to fetch of a message's text parts for a `body_format`, decided from BODYSTRUCTURE alone."""

    #: each part to fetch with its byte budget, all in one FETCH: the one to return, or (auto, when the plain text
    #: may be a stub) the plain part whole and the start of the HTML
    fetches: tuple[tuple[Part, int], ...]
    #: why the first of them is returned; None: auto must compare the two (`is_stub`)
    because: ChosenBecause | None


def _of_type(alternatives: Sequence[Part], content_type: str) -> Part | None:
    return next((part for part in alternatives if part.content_type == content_type), None)


def plan(alternatives: tuple[Part, ...], body_format: BodyFormat, max_chars: int) -> Plan:
    """What to fetch of `alternatives` (`parts.body_alternatives`) to return `body_format`, cut at `max_chars`."""
    plain, html = _of_type(alternatives, "text/plain"), _of_type(alternatives, "text/html")
    if body_format == "auto" and plain is not None and html is not None and plain.size <= STUB_MAX_BYTES:
        return Plan(((plain, plain.size), (html, fetch_budget(html, max(max_chars, DECIDING_CHARS)))), None)
    asked = {"text": plain, "html": html}.get(body_format)
    chosen = asked or preferred(alternatives)
    if chosen is None:
        return Plan((), "no text")
    because: ChosenBecause
    if body_format != "auto":
        because = "asked" if asked is not None else "fallback"
    else:
        because = "only one" if len(alternatives) == 1 else "not a stub"
    return Plan(((chosen, fetch_budget(chosen, max_chars)),), because)


def _length(text: str) -> int:
    """Characters of `text` with every run of white space counted as one (line wrapping differs between the two)."""
    return len(" ".join(text.split()))


def only_view_in_browser(plain: str) -> bool:
    """Whether `plain` is essentially only a "view this email in your browser" line: such a phrase, its links and
    at most `STUB_SPARE_WORDS` other words."""
    without_links = _LINK.sub(" ", plain)
    found = _VIEW_IN_BROWSER.search(without_links)
    if found is None:
        return False
    rest = without_links[: found.start()] + " " + without_links[found.end() :]
    return len(_WORD.findall(rest)) <= STUB_SPARE_WORDS


def is_stub(plain: str, html: str) -> bool:
    """Whether the plain text `plain` only stands in for the HTML whose text (or the start of it) is `html`."""
    if not plain.strip():
        return bool(html.strip())
    plain_length, html_length = _length(plain), _length(html)
    if html_length < plain_length + STUB_MIN_GAIN:
        return False
    return html_length >= STUB_RATIO * plain_length or only_view_in_browser(plain)
