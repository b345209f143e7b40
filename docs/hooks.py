"""MkDocs hooks: the pages that must not drift from the code or the README are written at every build.

`tools.md` is not a file in docs/: `on_files` adds it, generated from `server.tools.registry.TOOLS` (name,
feature, title, annotations, whether it asks) and the input and output schemas a server built with every
tool offered publishes. A page line `<!-- README: Title -->` becomes the README's section of that title
(`on_page_markdown`), so the quick start, the commands and the settings are written once, in the README.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"
INCLUDE = re.compile(r"^<!-- README: (.+) -->$", re.M)

ASKS = {"never": "never", "always": "**always**", "depends": "depends on the arguments"}


def tools_page() -> str:
    """The tools page, as Markdown."""
    from imap_mcp.server.app import build_server
    from imap_mcp.server.config import ImapSettings, Secret, Settings, SmtpSettings
    from imap_mcp.server.tools.registry import TOOLS

    imap = ImapSettings(host="imap.example.org", port=993, username="me@example.org", password=Secret("-"))
    smtp = SmtpSettings(
        host="smtp.example.org", port=465, username="me@example.org", password=Secret("-"), sender="me@example.org"
    )
    server = build_server(Settings(imap=imap, smtp=smtp))
    published = {tool.name: tool for tool in server._tool_manager.list_tools()}
    lines = [
        "# Tools",
        "",
        "Every tool this server can offer, from the registry (`server/tools/registry.py`) and the schemas the",
        "server publishes; this page is written at every docs build, so it says what the code does.",
        "",
        "| tool | feature | asks a person | readOnly | destructive | idempotent | openWorld |",
        "|---|---|---|---|---|---|---|",
    ]
    for spec in TOOLS:
        hints = spec.annotations()
        lines.append(
            f"| [`{spec.name}`](#{spec.name}) | {spec.feature} | {ASKS[spec.asks]} | "
            f"{_flag(hints.read_only_hint)} | {_flag(hints.destructive_hint)} | {_flag(hints.idempotent_hint)} | "
            f"{_flag(hints.open_world_hint)} |"
        )
    for spec in TOOLS:
        tool = published[spec.name]
        lines += ["", f"## {spec.name}", "", f"*{spec.title}.* {tool.description}", ""]
        lines.append(f"- Asks a person: {spec.asking}.")
        if spec.needs:
            lines.append(f"- Offered only when `{spec.needs}` is set.")
        if spec.writes_when:
            lines.append(f"- With `{spec.writes_when}` set it writes files: neither read-only nor idempotent then.")
        lines += ["", "**Arguments**", "", *_arguments(tool.parameters), "", "**Result** (output schema)", ""]
        lines += ["```json", json.dumps(tool.output_schema or {}, indent=2, sort_keys=True), "```"]
    return "\n".join(lines) + "\n"


def _flag(value: bool | None) -> str:
    return "true" if value else "false"


def _arguments(schema: dict[str, Any]) -> list[str]:
    properties: dict[str, Any] = schema.get("properties", {})
    if not properties:
        return ["None."]
    required = set(schema.get("required", []))
    rows = ["| name | type | default | meaning |", "|---|---|---|---|"]
    for name, field in properties.items():
        default = "required" if name in required else f"`{json.dumps(field.get('default'))}`"
        meaning = " ".join(str(field.get("description", "")).split()).replace("|", "\\|")
        rows.append(f"| `{name}` | {_type(field)} | {default} | {meaning} |")
    return rows


def _type(field: dict[str, Any]) -> str:
    if "anyOf" in field:
        return " or ".join(_type(option) for option in field["anyOf"])
    if field.get("type") == "array":
        return f"list of {_type(field.get('items', {}))}"
    if "enum" in field:
        return " / ".join(f"`{value}`" for value in field["enum"])
    return str(field.get("type", "object"))


def readme_section(title: str) -> str:
    """The README's `## title` section, heading included, its links into docs/ made relative to the site."""
    readme = README.read_text()
    start = readme.find(f"\n## {title}\n")
    if start < 0:
        raise ValueError(f"the README has no section '## {title}' (a docs page includes it)")
    section = readme[start + 1 :].split("\n## ", 1)[0]
    return section.replace("](docs/", "](")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return INCLUDE.sub(lambda found: readme_section(found.group(1)), markdown)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "tools.md", content=tools_page()))
    return files
