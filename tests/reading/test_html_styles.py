"""What CSS and attributes say about an element (`server/reading/html_styles.py`): why it hides, where a link goes."""

from __future__ import annotations

import pytest

from imap_mcp.server.reading.html_styles import MAX_LINK_CHARS, declarations, hiding, link_target, same_target


@pytest.mark.parametrize(
    ("style", "why"),
    [
        ("display: none !important", "display:none"),
        ("mso-hide:all", "mso-hide:all"),
        ("opacity:0", "opacity:0"),
        ("height:0;overflow:hidden", "max-height:0 with overflow:hidden".replace("max-", "")),
        ("position:absolute;left:-9999px", "positioned off-screen"),
        ("clip:rect(0 0 0 0)", "clipped to nothing"),
        ("color:red", None),
        ("left:-10px", None),
    ],
)
def test_hiding_names_why_declarations_hide_an_element(style: str, why: str | None) -> None:
    assert hiding(declarations(style)) == why


def test_a_link_target_is_one_line_without_angle_brackets_and_bounded() -> None:
    assert link_target(" https://a.example/x<y> z\nw ") == "https://a.example/x%3Cy%3E%20z%0Aw"
    assert link_target("#top") is None and link_target(None) is None
    long = link_target("https://a.example/" + "x" * 3 * MAX_LINK_CHARS)
    assert long is not None and len(long) == MAX_LINK_CHARS + 1 and long.endswith("…")
    assert same_target("HTTPS://A.example/", "https://a.example") and not same_target("", "https://a.example")
