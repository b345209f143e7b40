"""The layout stays findable: no two classes share a name across server/, protocol/ and sealing/."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_two_classes_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for folder in ("server", "protocol", "sealing"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    where[node.name].append(str(path.relative_to(ROOT)))
    # a class defined inside a function body (e.g. a per-instance signer) counts too
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert shared == {}, shared


PACKAGES = {"server": "imap_mcp.server", "protocol": "imap_mcp.protocol", "sealing": "imap_mcp.sealing"}


def _runtime_imports(tree: ast.Module) -> list[ast.ImportFrom]:
    """The `from … import` statements that run: those under `if TYPE_CHECKING:` name types only."""
    skipped = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for statement in node.body
        for child in ast.walk(statement)
    }
    return [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and id(n) not in skipped]


def test_inside_a_package_imports_are_relative() -> None:
    """A reader (or a tool) that has not installed the package can follow every import inside it."""
    absolute = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for folder, dotted in PACKAGES.items()
        for path in sorted((ROOT / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(dotted)
    ]
    assert absolute == []


def _folder_graph() -> dict[str, set[str]]:
    """server/'s folders and what each imports at run time (`folder` → the folders of its relative imports)."""
    server = ROOT / "server"
    edges: dict[str, set[str]] = defaultdict(set)
    for path in server.rglob("*.py"):
        package = list(path.relative_to(server).parts[:-1])
        if not package:
            continue
        for node in _runtime_imports(ast.parse(path.read_text())):
            if not node.level:
                continue
            parts = package[: len(package) - node.level + 1] + (node.module or "").split(".")
            target = next((p for p in parts if p), "")
            if target != package[0] and (server / target).is_dir():
                edges[package[0]].add(target)
    return edges


def test_no_two_folders_of_server_import_each_other() -> None:
    edges = _folder_graph()
    circles = sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges.get(b, set()))
    assert circles == []


def test_every_tool_lives_in_the_module_and_folder_named_for_its_feature() -> None:
    """From the registry: `server/tools/<feature>.py` registers it, and `server/<feature>/` holds what is behind it."""
    from imap_mcp.server.config import ImapSettings, Settings, SmtpSettings
    from imap_mcp.server.serving.app import build_server
    from imap_mcp.server.setting_values import Secret
    from imap_mcp.server.tools.registry import TOOLS

    imap = ImapSettings(host="imap.example", port=993, username="u@example.org", password=Secret("pw"))
    smtp = SmtpSettings(
        host="smtp.example", port=465, username="u@example.org", password=Secret("pw"), sender="u@example.org"
    )
    server = build_server(Settings(imap=imap, smtp=smtp))
    registered = {tool.name: tool.fn for tool in server._tool_manager.list_tools()}
    assert sorted(registered) == sorted(spec.name for spec in TOOLS)
    for spec in TOOLS:
        module = getattr(registered[spec.name], "__wrapped__", registered[spec.name]).__module__
        assert module == f"imap_mcp.server.tools.{spec.feature}", spec.name
        assert (ROOT / "server" / spec.feature / "__init__.py").is_file(), spec.feature
