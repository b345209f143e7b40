"""The README and the command's help agree: every command and option in the Commands table, one exit code."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from imap_mcp.server import cli
from imap_mcp.server import setting_values as config

ROOT = Path(__file__).resolve().parent.parent


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command and action under `parser`, by its name as typed (`webhook set`)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[f"{prefix}{name}"] = sub
                found.update(commands(sub, f"{prefix}{name} "))
    return found


def readme_section(title: str) -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def command_rows() -> list[str]:
    """The first cell of each row of the README's Commands table."""
    return re.findall(r"^\| (`imap-mcp.*?) \| ", readme_section("Commands"), re.M)


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings if option != "-h"} - {"--help"}


def test_the_readme_lists_every_command_with_each_of_its_options() -> None:
    rows = command_rows()
    for name, parser in commands(cli.build_parser()).items():
        if name == "webhook":
            continue  # its actions have the rows
        [row] = [row for row in rows if re.search(rf"`(imap-mcp )?{name}\b", row)] or [f"(no row for {name})"]
        for option in options(parser):
            assert option in row, (name, option, row)
    assert "--version" in " ".join(rows)


def test_the_exit_code_of_configuration_errors_is_one_and_documented() -> None:
    assert cli.CONFIG_ERROR_EXIT == config.CONFIG_ERROR_EXIT == config.ConfigError("x").exit_code
    said = " ".join(readme_section("Commands").split())
    assert f"exit code {config.CONFIG_ERROR_EXIT}, for every setting" in said


def _slugs(page: str) -> set[str]:
    """The anchors of a docs page's headings, README sections included, as the site's toc makes them."""
    from markdown.extensions.toc import slugify  # type: ignore[import-untyped]
    from test_docs_site import docs_hooks

    text = docs_hooks()["on_page_markdown"]((ROOT / "docs" / page).read_text(), None, None, None)
    return {slugify(title.strip(), "-") for title in re.findall(r"^#+ (.+)$", text, re.M)}


def test_every_help_ends_with_the_address_of_its_documentation() -> None:
    """A pipx user has no README: each command's help names the page (and section) that documents it."""
    parsers = {"": cli.build_parser(), **commands(cli.build_parser())}
    assert set(parsers) == set(cli.COMMAND_DOCS)
    for name, parser in parsers.items():
        last = parser.format_help().rstrip().splitlines()[-1]
        assert last == f"{cli.DOCS_BASE}{cli.COMMAND_DOCS[name]}", (name, last)
        page, _, anchor = cli.COMMAND_DOCS[name].partition("#")
        assert (ROOT / "docs" / page).is_file(), name
        assert not anchor or anchor in _slugs(page), (name, anchor)
