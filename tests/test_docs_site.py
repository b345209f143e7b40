"""The docs site as a newcomer sees it: built as `scripts/dev lint` builds it, then read page by page.

The rules: no page repeats its first heading (a README section included under a page title of the same name
did); no visible text keeps an escaping backslash (`google\\|microsoft`, GitHub's way to write `|` in a table's
code, which Python-Markdown shows as it is); no page scrolls sideways in a 1280 px wide window (a wide table or
line did). The first two are read from the built HTML (fast lane); the third needs a browser: headless Chromium
(Debian `chromium`, which `scripts/dev` installs) renders every page, and it checks the first two again on
what Chromium shows.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: a backslash shown before a character Markdown escapes (not one before another backslash: `\\Seen` in JSON)
ESCAPING_BACKSLASH = re.compile(r"(?<!\\)\\[|*_`#\[\]]")
#: in code (where `\*` is IMAP's own word, PERMANENTFLAGS' "any keyword"), only the table escape `\|`
ESCAPING_BACKSLASH_IN_CODE = re.compile(r"(?<!\\)\\\|")
WIDTH = 1280


class _Page(HTMLParser):
    """The headings (level, text) of a page, its visible text outside code, and its inline code (`code` outside
    `pre`; code blocks show JSON and IMAP as they are)."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[tuple[int, str]] = []
        self.text: list[str] = []
        self.code: list[str] = []
        self._heading: tuple[int, list[str]] | None = None
        self._hidden = 0  #: inside script, style or pre
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "pre"):
            self._hidden += 1
        elif tag == "code":
            self._code += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self._heading = (int(tag[1]), [])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "pre"):
            self._hidden -= 1
        elif tag == "code":
            self._code -= 1
        elif self._heading is not None and tag == f"h{self._heading[0]}":
            self.headings.append((self._heading[0], " ".join("".join(self._heading[1]).split())))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading[1].append(data)
        if not self._hidden:
            (self.code if self._code else self.text).append(data)


def docs_hooks() -> dict[str, Any]:
    """docs/hooks.py's names, loaded as MkDocs loads it (without writing a __pycache__ into docs/)."""
    path = ROOT / "docs" / "hooks.py"
    hooks: dict[str, Any] = {"__name__": "docs_hooks", "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), hooks)
    return hooks


def test_without_dovecot_the_build_fails_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never a tools page without its examples: the build stops with the reason as its one error line."""
    from mkdocs.exceptions import PluginError

    from imap_mcp.server.demo import examples
    from imap_mcp.server.demo.dovecot import DovecotError

    def no_dovecot() -> None:
        raise DovecotError("Dovecot is not installed. Install it with: sudo apt-get install -y dovecot-imapd")

    monkeypatch.setattr(examples, "tool_examples", no_dovecot)
    with pytest.raises(PluginError) as failed:
        docs_hooks()["tools_page"]()
    assert "against the demo's private Dovecot" in str(failed.value) and "dovecot-imapd" in str(failed.value)


def build_site(into: Path) -> Path:
    """The site as `mkdocs build --strict` writes it (the tools page's examples run against the demo)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(str(ROOT / "mkdocs.yml"), site_dir=str(into), strict=True))
    return into


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("site"))


def pages(site: Path) -> list[Path]:
    found = sorted(path for path in site.rglob("index.html") if path.parent.name != "search")
    assert len(found) > 10, found
    return found


def repeated_first_heading(headings: list[tuple[int, str]]) -> str | None:
    """The page's first heading when another heading says the same (`¶` permalinks left out), else None."""
    titles = [text.rstrip("¶").strip() for _level, text in headings]
    return titles[0] if titles and titles[0] in titles[1:] else None


def escaping_backslashes(text: str, code: str = "") -> list[str]:
    """Each escaping backslash shown in `text`, or in the inline `code`, with what is around it."""
    found = [*ESCAPING_BACKSLASH.finditer(text), *ESCAPING_BACKSLASH_IN_CODE.finditer(code)]
    return [m.string[max(0, m.start() - 20) : m.end() + 20] for m in found]


def read(page: Path) -> _Page:
    parsed = _Page()
    parsed.feed(page.read_text())
    return parsed


def test_no_page_repeats_its_first_heading(site: Path) -> None:
    for page in pages(site):
        assert repeated_first_heading(read(page).headings) is None, page.relative_to(site)


def test_no_page_shows_an_escaping_backslash(site: Path) -> None:
    for page in pages(site):
        parsed = read(page)
        assert escaping_backslashes(" ".join(parsed.text), " ".join(parsed.code)) == [], page.relative_to(site)


def test_the_rules_catch_what_they_are_about() -> None:
    assert repeated_first_heading([(1, "Configuration¶"), (2, "Configuration¶"), (2, "Other")]) == "Configuration"
    assert repeated_first_heading([(1, "Tools"), (2, "list_mailboxes")]) is None
    assert escaping_backslashes("", "imap-mcp auth google\\|microsoft") != []
    assert escaping_backslashes("a \\* b") != [] and escaping_backslashes("", "PERMANENTFLAGS \\*") == []
    assert escaping_backslashes('"add": ["\\\\Seen"] and \\Flagged') == []


def test_the_tools_page_shows_an_example_of_every_tool_before_its_schema(site: Path) -> None:
    from imap_mcp.server.tools.registry import TOOLS

    html = (site / "tools" / "index.html").read_text()
    for spec in TOOLS:
        section = html.split(f'<h2 id="{spec.name}">', 1)[1].split("<h2 ", 1)[0]
        example, _, schema = section.partition("(output schema)")
        assert "run against the demo at this build" in example and f"&quot;{spec.name}&quot;" in example, spec.name
        assert "Its result:" in example and schema, spec.name


# --- Chromium: what a 1280 px window shows ---

#: run in each page once it is laid out: its measurements, as JSON in an element Chromium's --dump-dom writes out
MEASURE = """<script>
addEventListener("load", () => {
  const root = document.documentElement;
  const headings = [...document.querySelectorAll("h1, h2, h3")].map((h) => [Number(h.tagName[1]), h.innerText]);
  const own = (e) => [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join("");
  const all = [...document.body.querySelectorAll("*")].filter((e) => !e.closest("pre") && e.checkVisibility());
  const shown = all.filter((e) => !e.closest("code")).map(own).join(" ");
  const code = all.filter((e) => e.closest("code")).map(own).join(" ");
  const wide = all.filter((e) => e.getBoundingClientRect().right > root.clientWidth + 1)
    .map((e) => e.tagName + "." + e.className).slice(0, 5);
  const out = document.createElement("output");
  out.id = "measured";
  const width = root.scrollWidth;
  out.textContent = JSON.stringify({width, headings, shown, code, wide});
  document.body.append(out);
});
</script>"""


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium")
    assert found, "chromium is not installed: scripts/dev test installs it (Debian package chromium)"
    return found


def rendered(chromium: str, page: Path) -> dict[str, object]:
    """What Chromium shows of `page` in a 1280 px window (see MEASURE)."""
    measured = page.with_name("measured.html")
    measured.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={WIDTH},900",
            "--virtual-time-budget=3000",
            "--dump-dom",
            measured.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r'<output id="measured">(.*?)</output>', done.stdout, re.S)
    assert found, f"Chromium showed nothing of {page}: {done.stderr[-2000:]}"
    import html

    result: dict[str, object] = json.loads(html.unescape(found.group(1)))
    return result


@pytest.fixture(scope="module")
def shown(site: Path, chromium: str) -> Iterator[dict[str, dict[str, object]]]:
    yield {str(page.relative_to(site)): rendered(chromium, page) for page in pages(site)}


@pytest.mark.slow
def test_no_page_scrolls_sideways_at_1280_px(shown: dict[str, dict[str, object]]) -> None:
    wide = {name: (seen["width"], seen["wide"]) for name, seen in shown.items() if seen["width"] != WIDTH}
    assert wide == {}


@pytest.mark.slow
def test_chromium_shows_no_repeated_first_heading_and_no_escaping_backslash(
    shown: dict[str, dict[str, object]],
) -> None:
    for name, seen in shown.items():
        headings = [(level, text) for level, text in seen["headings"]]  # type: ignore[attr-defined]
        assert repeated_first_heading(headings) is None, name
        assert escaping_backslashes(str(seen["shown"]), str(seen["code"])) == [], name
