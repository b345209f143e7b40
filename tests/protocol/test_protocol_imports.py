"""protocol/ knows no IMAP: it imports neither imapclient nor imaplib, nor anything of the server."""

from __future__ import annotations

import ast
from pathlib import Path

import imap_mcp.protocol

FORBIDDEN_ROOTS = {"imapclient", "imaplib", "smtplib"}
FORBIDDEN_PACKAGES = ("imap_mcp.server",)


def imported_modules(path: Path) -> list[str]:
    modules: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules.append(node.module or "")
    return modules


def test_protocol_imports_neither_imap_nor_the_server() -> None:
    paths = sorted(Path(imap_mcp.protocol.__file__).parent.glob("*.py"))
    assert paths
    for path in paths:
        for module in imported_modules(path):
            assert module.split(".")[0] not in FORBIDDEN_ROOTS, (path.name, module)
            assert not module.startswith(FORBIDDEN_PACKAGES), (path.name, module)
