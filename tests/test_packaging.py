"""The wheel holds every package: pyproject's list matches the folders that are packages."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _package_dirs() -> tuple[dict[str, str], list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return config["package-dir"], config["packages"]


def test_every_folder_with_an_init_is_a_listed_package() -> None:
    mapping, listed = _package_dirs()
    found = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *relative.parts]))
    assert found == set(listed)


def test_no_module_lives_outside_a_package() -> None:
    mapping, _ = _package_dirs()
    orphans = [
        str(module.relative_to(ROOT))
        for folder in mapping.values()
        for module in (ROOT / folder).rglob("*.py")
        if not (module.parent / "__init__.py").exists()
    ]
    assert orphans == []
