r"""MkDocs hooks: the pages that must not drift from the code or the README are written at every build.

`tools.md` is not a file in docs/: `on_files` adds it, generated from `server.tools.registry.TOOLS` (name,
feature, title, annotations, whether it asks), one real call of each tool and its result, run against the
demo's private Dovecot and sample mail at this build (`server.demo.examples`), and the input and output schemas
a server built with every tool offered publishes. A build where the examples cannot run (Dovecot missing, a
tool without an example) fails, saying why, rather than write a page without them. A page line
`<!-- README: Title -->` becomes the README's section of that title (`on_page_markdown`), so the quick start,
the commands and the settings are written once, in the README; its heading is left out where it would repeat
the page's own title, and a `\|` in a table's code (GitHub's way to write `|` there) becomes `|`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"
INCLUDE = re.compile(r"^<!-- README: (.+) -->$", re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
#: how long a string or list of an example result may be on the page; the rest is shortened, saying so
SHOWN_CHARS = 240
SHOWN_ITEMS = 3

ASKS = {"never": "never", "always": "**always**", "depends": "depends on the arguments"}


def tools_page() -> str:
    """The tools page, as Markdown."""
    from mkdocs.exceptions import PluginError

    from imap_mcp.server.config import ImapSettings, Settings, SmtpSettings
    from imap_mcp.server.demo.examples import tool_examples
    from imap_mcp.server.serving.app import build_server
    from imap_mcp.server.setting_values import Secret
    from imap_mcp.server.tools.registry import TOOLS

    imap = ImapSettings(host="imap.example.org", port=993, username="me@example.org", password=Secret("-"))
    smtp = SmtpSettings(
        host="smtp.example.org", port=465, username="me@example.org", password=Secret("-"), sender="me@example.org"
    )
    server = build_server(Settings(imap=imap, smtp=smtp))
    published = {tool.name: tool for tool in server._tool_manager.list_tools()}
    try:
        examples = tool_examples()
    except Exception as exc:  # whatever stops them, the build stops, saying why: never a page without them
        raise PluginError(
            f"docs/hooks.py: the tools page's examples run every tool against the demo's private Dovecot, and "
            f"that failed: {type(exc).__name__}: {exc}"
        ) from None
    missing = [spec.name for spec in TOOLS if spec.name not in examples]
    if missing:
        raise PluginError(f"docs/hooks.py: no example for {', '.join(missing)}: add one to server/demo/examples.py")
    lines = [
        "# Tools",
        "",
        "Every tool this server can offer, from the registry (`server/tools/registry.py`) and the schemas the",
        "server publishes; this page is written at every docs build, so it says what the code does. Each tool's",
        "example is a real call, made at this build against the demo's private Dovecot and its sample mail",
        "(`imap-mcp demo`), in this order, with a person saying yes to every question: its result is what the",
        f"client got (`structuredContent`; here a text over {SHOWN_CHARS} characters, or a list over",
        f"{SHOWN_ITEMS} items, is shortened, saying how much was left out). Ids and dates differ at every build.",
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
        lines += ["", *_example(examples[spec.name])]
        lines += ["", "**Arguments**", "", *_arguments(tool.parameters), "", "**Result** (output schema)", ""]
        lines += ["```json", json.dumps(tool.output_schema or {}, indent=2, sort_keys=True), "```"]
    return "\n".join(lines) + "\n"


def _example(example: Any) -> list[str]:
    """The example call of a tool, what a person was asked before it ran, and its result (shortened)."""
    call = {"name": example.tool, "arguments": example.arguments}
    lines = [
        "**Example** (run against the demo at this build)",
        "",
        "```json",
        json.dumps(call, indent=2, ensure_ascii=False),
    ]
    lines.append("```")
    for asked in example.asked:
        lines += ["", "A person was asked, and said yes:", "", "```text", asked, "```"]
    lines += [
        "",
        "Its result:",
        "",
        "```json",
        json.dumps(_shortened(example.structured), indent=2, ensure_ascii=False),
        "```",
    ]
    return lines


def _shortened(value: Any) -> Any:
    """`value` with its long texts and lists cut, each cut saying how much was left out."""
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return f"{value[:SHOWN_CHARS]}… ({len(value) - SHOWN_CHARS} more characters)"
    if isinstance(value, list):
        shown = [_shortened(item) for item in value[:SHOWN_ITEMS]]
        return shown + ([f"… ({len(value) - SHOWN_ITEMS} more)"] if len(value) > SHOWN_ITEMS else [])
    if isinstance(value, dict):
        return {key: _shortened(item) for key, item in value.items()}
    return value


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


def readme_section(title: str, heading: bool = True) -> str:
    """The README's `## title` section (its heading too, with `heading`), its links into docs/ made relative to the
    site and the `\\|` of its tables' code written `|` (Python-Markdown keeps a backslash there; GitHub does not)."""
    readme = README.read_text()
    start = readme.find(f"\n## {title}\n")
    if start < 0:
        raise ValueError(f"the README has no section '## {title}' (a docs page includes it)")
    section = readme[start + 1 :].split("\n## ", 1)[0]
    if not heading:
        section = section.split("\n", 1)[1].lstrip("\n")
    lines = [_pipes_in_code(line) if line.startswith("|") else line for line in section.split("\n")]
    return "\n".join(lines).replace("](docs/", "](")


def _pipes_in_code(row: str) -> str:
    return CODE_SPAN.sub(lambda code: code.group(0).replace("\\|", "|"), row)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    title = re.match(r"# (.+)\n", markdown)

    def section(found: re.Match[str]) -> str:
        return readme_section(found.group(1), heading=title is None or title.group(1) != found.group(1))

    return INCLUDE.sub(section, markdown)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "tools.md", content=tools_page()))
    return files
