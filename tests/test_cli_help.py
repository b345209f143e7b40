"""The README and the command's help agree: every command and option in the Commands table, one exit code."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from imap_mcp.server import cli, config

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
