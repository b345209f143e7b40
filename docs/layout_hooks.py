"""MkDocs hook: the layout table of docs/contributing.md, drawn from the code at every build.

A page line `<!-- LAYOUT -->` becomes a table of every package folder (`server/…`, `protocol/`, `sealing/`,
`spec-fixtures/`) with the first paragraph of its `__init__` docstring and its modules, and of each module that
stands alone at `server/`'s top level with its docstring's first sentence; so the table cannot drift from the tree.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = re.compile(r"^<!-- LAYOUT -->$", re.M)
FOLDERS = {"server": "imap_mcp.server", "protocol": "imap_mcp.protocol", "sealing": "imap_mcp.sealing"}
FOLDERS["spec-fixtures"] = "imap_mcp.spec_fixtures"


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _first_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n")[0].split()).replace("|", "\\|")


def _first_sentence(text: str) -> str:
    paragraph = _first_paragraph(text)
    return re.split(r"(?<=[.:])\s", paragraph, maxsplit=1)[0]


def _modules(folder: Path) -> str:
    return ", ".join(f"`{p.stem}`" for p in sorted(folder.glob("*.py")) if p.stem != "__init__")


def layout_table() -> str:
    rows = ["| folder | installs as | what | modules |", "|---|---|---|---|"]
    for top, dotted in FOLDERS.items():
        folders = [ROOT / top, *sorted(p for p in (ROOT / top).iterdir() if (p / "__init__.py").is_file())]
        for folder in dict.fromkeys(folders):
            relative = folder.relative_to(ROOT)
            name = ".".join([dotted, *relative.parts[1:]])
            what = _first_paragraph(_docstring(folder / "__init__.py"))
            modules = _modules(folder) if folder != ROOT / "server" else "the loose modules below"
            rows.append(f"| `{relative}/` | `{name}` | {what} | {modules} |")
    rows += ["", "The modules that stand alone at `server/`'s top level:", "", "| module | what |", "|---|---|"]
    for path in sorted((ROOT / "server").glob("*.py")):
        if path.stem not in ("__init__", "__main__"):
            rows.append(f"| `server/{path.name}` | {_first_sentence(_docstring(path))} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return LAYOUT.sub(lambda _: layout_table(), markdown)
