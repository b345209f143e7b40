"""Arguments a tool cannot take, said in imap-mcp's own words: one translation for every tool, in both eras.

The SDK validates a call's arguments with the tool's pydantic model before the tool runs, and answers a failure
with pydantic's report: its type names, the value as Python repr, and a link to pydantic's documentation, none of
which tells a model what this tool takes. `in_our_words` turns that report into one line per argument: the
argument's path as the input schema names it (`query.since`, `ids[2]`), what was given (as JSON, escaped and cut at
`GIVEN_MAX` characters), and what is accepted, read from the same input schema the client was given (its type,
bounds, choices, format and description), so the two cannot disagree. A check of imap-mcp's own (an
`AfterValidator` such as the flag check) keeps its message, which is already written for the model. Nothing of the
library's text or links is kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

#: the most argument problems one answer lists (the rest are counted)
MOST_SHOWN = 6
#: the most characters of a given value shown
GIVEN_MAX = 60
#: the longest description of an argument quoted with what it accepts
DESCRIPTION_MAX = 160

Schema = Mapping[str, Any]


def in_our_words(error: ValidationError, schema: Schema, arguments: Mapping[str, Any]) -> str:
    """One line per argument `error` found fault with in `arguments` (see the module's doc), and that nothing was
    done."""
    lines: dict[str, str] = {}
    for detail in error.errors(include_url=False):
        extra = detail["type"] == "extra_forbidden"
        steps, node, whole = _located(detail["loc"][:-1] if extra else detail["loc"], schema)
        path = _path(steps)
        if extra and not whole:
            key = detail["loc"][-1]
            line = (
                f"Argument {_path([*steps, key])} is not one {path or 'this tool'} takes; leave it out (accepted: "
                f"{_accepted(node, schema)})."
            )
            path = _path([*steps, key])
        elif detail["type"] == "missing" and not whole:
            line = f"Argument {path} is missing: it is required; give {_accepted(node, schema)}."
        elif detail["type"] == "value_error" and "error" in detail.get("ctx", {}) and not whole:
            line = f"Argument {path} was given {_given(detail['input'])}: {detail['ctx']['error']}"
        else:
            given = _given(_value_at(arguments, steps)) if whole else _given(detail["input"])
            line = f"Argument {path} was given {given}; accepted: {_accepted(node, schema)}."
        lines.setdefault(path, line)
    shown = list(lines.values())[:MOST_SHOWN]
    if len(lines) > MOST_SHOWN:
        shown.append(f"And {len(lines) - MOST_SHOWN} more arguments that cannot be used as given.")
    shown.append("Nothing was done: call again with the arguments corrected (the tool's input schema has them all).")
    return "\n".join(shown)


def _path(steps: Sequence[int | str]) -> str:
    """The argument's path as the input schema names it, quoted: 'query.since', 'ids[2]'."""
    text = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps).lstrip(".")
    return f"'{text}'" if text else ""


def _value_at(arguments: Mapping[str, Any], steps: Sequence[int | str]) -> object:
    """What the caller gave at `steps` of `arguments`."""
    value: object = arguments
    for step in steps:
        if isinstance(step, int) and isinstance(value, list) and step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, Mapping):
            value = value.get(step)
        else:
            return None
    return value


def _given(value: object) -> str:
    """`value` as JSON on one line (control and non-ASCII characters escaped), cut at `GIVEN_MAX` characters."""
    if isinstance(value, str) and len(value) > GIVEN_MAX:
        value = value[: GIVEN_MAX + 1]
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= GIVEN_MAX else text[:GIVEN_MAX] + "… (cut)"


def _resolved(node: Schema, root: Schema) -> Schema:
    """`node` with its `$ref` (to the schema's `$defs`) followed."""
    while "$ref" in node:
        node = root.get("$defs", {}).get(str(node["$ref"]).rsplit("/", 1)[-1], {})
    return node


def _members(node: Schema, root: Schema) -> list[Schema]:
    """The schemas a value may match: each `anyOf`/`oneOf` member (resolved), or `node` itself."""
    node = _resolved(node, root)
    options = node.get("anyOf") or node.get("oneOf")
    return [_resolved(option, root) for option in options] if options else [node]


def _located(loc: Sequence[int | str], root: Schema) -> tuple[list[int | str], Schema, bool]:
    """The steps of `loc` the input schema names (properties, list positions), the schema there, and whether the
    fault lies inside one member of a union (pydantic's location then names the member it tried: `InlineFile`,
    `function-after[…]`): it is then reported at the union, as a value none of its members accepts (`True`)."""
    steps: list[int | str] = []
    node: Schema = root
    for step in loc:
        members = _members(node, root)
        if isinstance(step, int):
            array = next((m for m in members if m.get("type") == "array"), None)
            if array is None:
                continue
            steps.append(step)
            node = array.get("items", {})
            continue
        holder = next((m for m in members if step in m.get("properties", {})), None)
        if holder is not None:
            steps.append(step)
            node = holder["properties"][step]
        elif len([m for m in members if m.get("type") != "null"]) > 1:
            return steps, node, True
    return steps, node, False


def _accepted(node: Schema, root: Schema) -> str:
    """What `node` accepts, in words, with its description where short."""
    members = _members(node, root)
    words = [_one(member, root) for member in members if member.get("type") != "null"]
    text = " or ".join(dict.fromkeys(words)) or "any value"
    if any(member.get("type") == "null" for member in members):
        text += ", or null"
    description = _resolved(node, root).get("description")
    if isinstance(description, str) and len(description) <= DESCRIPTION_MAX:
        text += f" ({description.rstrip('.')})"
    return text


def _one(node: Schema, root: Schema) -> str:
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return "one of " + ", ".join(json.dumps(choice) for choice in node["enum"])
    kind = node.get("type")
    if kind == "string":
        return _string(node)
    if kind in ("integer", "number"):
        bounds = _bounds(node, "minimum", "maximum", "") or _bounds(node, "exclusiveMinimum", "exclusiveMaximum", "")
        return ("a whole number" if kind == "integer" else "a number") + bounds
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        items = _accepted(node.get("items", {}), root) if node.get("items") else "values"
        return "a list" + _bounds(node, "minItems", "maxItems", " items") + f", each {items}"
    if kind == "object" or "properties" in node:
        keys = ", ".join(node.get("properties", {}))
        return f"an object with the keys {keys}" if keys else "an object"
    return "a value as the tool's input schema says"


def _string(node: Schema) -> str:
    formats = {"date": "a date, YYYY-MM-DD", "date-time": "a date and time, YYYY-MM-DDTHH:MM:SS with its offset"}
    if node.get("format") in formats:
        return formats[node["format"]]
    if node.get("minLength") == 1 and "maxLength" not in node:
        text = "non-empty text"
    else:
        text = "text" + _bounds(node, "minLength", "maxLength", " characters")
    if "pattern" in node:
        text += f" matching the pattern {node['pattern']}"
    return text


def _bounds(node: Schema, low_key: str, high_key: str, unit: str) -> str:
    low, high = node.get(low_key), node.get(high_key)
    if low is not None and high is not None:
        return f" of {low} to {high}{unit}" if unit else f" from {low} to {high}"
    if low is not None:
        return f" of at least {low}{unit}" if unit else f" of at least {low}"
    if high is not None:
        return f" of at most {high}{unit}" if unit else f" of at most {high}"
    return ""
