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
