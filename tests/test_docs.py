"""The README is the first five minutes and its tool table is the registry's; the site says the rest."""

from __future__ import annotations

import re
from pathlib import Path

from imap_mcp.server.tools.registry import TOOLS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def readme_tool_rows() -> dict[str, list[str]]:
    """The README's tool table: each row's cells after the tool's name, by that name."""
    section = README.split("\n## Tools\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| (.*) \|$", section, re.M)
    return {name: [cell.strip() for cell in rest.split(" | ")] for name, rest in rows}


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.splitlines()) <= 200, "move the detail into docs/ and link to it"


def test_the_readme_tool_table_is_the_registry() -> None:
    """Every tool once, in the registry's order, with how it asks and its four annotations as the server states
    them (a tool added to the registry, or an annotation changed there only, fails here)."""
    rows = readme_tool_rows()
    assert list(rows) == [spec.name for spec in TOOLS]
    for spec in TOOLS:
        hints = spec.annotations()
        flags = [hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint]
        _what, asking, *said = rows[spec.name]
        assert asking == spec.asking, spec.name
        assert said == ["true" if flag else "false" for flag in flags], spec.name


def test_every_docs_page_the_readme_links_to_exists() -> None:
    for target in re.findall(r"\]\(docs/([^)#]+)", README):
        assert target == "tools.md" or (ROOT / "docs" / target).is_file(), target
