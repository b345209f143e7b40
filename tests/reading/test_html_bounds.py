"""HTML bounded before it is parsed (`server/reading/html_bounds.py`): nesting read flat past `MAX_DEPTH`, a tag
longer than `MAX_TAG` read as text, markup never finished read in one pass."""

from __future__ import annotations

from imap_mcp.server.reading.html_bounds import MAX_DEPTH, MAX_TAG, bounded_html, nests_too_deep
from imap_mcp.server.reading.html_text import MAX_NESTING, convert_html


def test_deep_nesting_is_read_flat_beyond_the_bounds() -> None:
    html = "<ul><li>item " * 3_000 + "deepest" + "<blockquote>q" * 3_000
    assert nests_too_deep(html)
    converted = convert_html(html)
    assert converted.text.count("item") == 3_000 and "deepest" in converted.text
    assert max(len(line) - len(line.lstrip()) for line in converted.text.splitlines()) <= 2 * MAX_NESTING
    assert max(line.count("> ") for line in converted.text.splitlines()) <= MAX_NESTING
    assert not nests_too_deep("<div>" * 50 + "</div>" * 50 + "<div>" * 50)


def test_a_tag_longer_than_max_tag_is_text_and_one_within_it_is_markup() -> None:
    def link(title_length: int) -> str:
        return f'<a title="{"x" * title_length}" href="https://example.org/">here</a>'

    within = link(MAX_TAG - len('<a title="" href="https://example.org/">'))
    assert len(within.split("here")[0]) == MAX_TAG
    assert bounded_html(within) == within
    too_long = link(MAX_TAG)
    assert bounded_html(too_long) == "&lt;" + too_long[1:]
    assert convert_html(too_long).text == "here <https://example.org/>"  # shallow HTML goes to the parser whole


def test_markup_never_finished_is_read_as_text_in_one_pass() -> None:
    """200 KB of a start tag that never ends: each search stops at MAX_TAG, so the whole is text; the parser shows
    none of it, as a browser shows nothing of a tag cut off by the end of the page."""
    unfinished = "<a " + "b=c " * 50_000
    assert bounded_html(unfinished) == "&lt;" + unfinished[1:]
    assert convert_html(unfinished).text == ""
    deep = "<div>" * (MAX_DEPTH + 1) + unfinished
    assert convert_html(deep).text == unfinished.strip()  # rewritten first, so read as text
    assert bounded_html("before<!-- never closed <b>hidden</b>") == "before"  # as a browser hides it
