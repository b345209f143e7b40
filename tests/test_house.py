"""The house kept (issue 43): no import circle between files, no module over 500 lines, and server/'s top level
holds only the modules that stand alone, each saying why in its first docstring line."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"server": "imap_mcp.server", "protocol": "imap_mcp.protocol", "sealing": "imap_mcp.sealing"}
MAX_LINES = 500
#: the modules at server/'s top level, beside its folders: each stands alone (its docstring's first line says why)
LOOSE = {"__init__", "__main__", "cli", "config", "errors", "guard", "logs", "outbound_http", "setting_values", "tls"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, dotted in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [*dotted.split("."), *path.relative_to(ROOT / folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The project's modules `module` imports, each by its dotted name (type-checking imports too: a circle of
    types is a circle a reader follows)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join([*base, *([node.module] if node.module else [])])
        else:
            target = node.module or ""
        for alias in node.names:
            if f"{target}.{alias.name}" in known:
                yield f"{target}.{alias.name}"
            elif target in known:
                yield target


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_two_files_import_each_other_in_a_circle() -> None:
    known = _modules()
    graph = {module: set(_imported(module, path, known)) - {module} for module, path in known.items()}
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for folder in (*FOLDERS, "spec-fixtures")
        for path in (ROOT / folder).rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these by what they do: {long}"


def test_server_top_level_holds_only_the_modules_that_stand_alone() -> None:
    loose = {path.stem for path in (ROOT / "server").glob("*.py")}
    assert loose == LOOSE, "a new module belongs in the folder of its feature (docs/contributing.md, Layout)"
    assert len(loose - {"__init__", "__main__"}) <= 8
    for name in loose - {"__init__", "__main__"}:
        docstring = ast.get_docstring(ast.parse((ROOT / "server" / f"{name}.py").read_text()))
        assert docstring and "At server/'s top level" in " ".join(docstring.split()), (
            f"server/{name}.py says in its docstring why it stands alone"
        )


def test_the_layout_page_is_drawn_from_the_tree() -> None:
    spec = importlib.util.spec_from_file_location("layout_hooks", ROOT / "docs" / "layout_hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = hooks.on_page_markdown("# Layout\n\n<!-- LAYOUT -->\n", None, None, None)
    for init in sorted((ROOT / "server").glob("*/__init__.py")):
        folder = init.parent.relative_to(ROOT)
        assert f"| `{folder}/` | `imap_mcp.{'.'.join(folder.parts)}` |" in page
        assert all(f"`{module.stem}`" in page for module in init.parent.glob("*.py") if module.stem != "__init__")
    assert all(f"`server/{name}.py`" in page for name in LOOSE - {"__init__", "__main__"})
    assert "<!-- LAYOUT -->" not in page
