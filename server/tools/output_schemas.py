"""Output schemas a client checks quickly: the same constraints in fewer JSON Schema nodes.

Clients validate every structured result against the tool's output schema (the Python SDK's
`ClientSession` does so on each call). A JSON Schema validator's time grows with the schema nodes
it walks per value, and pydantic writes a nested model as a `$ref` to `$defs`: `compact` puts each
definition in place, which any validator reads the same way; recursive definitions stay `$ref`s.

An optional field stays as pydantic writes it, `anyOf` of one-type branches. The one-node spelling,
a type list (`"type": ["string", "null"]`), is cheaper to check but not portable: clients that map
tool schemas onto a single-`type` dialect (the OpenAPI subset of Gemini function declarations)
reject the tool or drop the constraint, and MCP Inspector's `--strict` lint warns about each one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp.server.mcpserver import MCPServer

_REF_PREFIX = "#/$defs/"


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `$defs` inlined (but recursive ones)."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    if any(
        not reference.startswith(_REF_PREFIX) or reference.removeprefix(_REF_PREFIX) not in definitions
        for reference in _references(schema)
    ):
        return schema  # a reference outside `$defs`: published as pydantic wrote it
    kept: set[str] = set()

    def rewrite(node: Any, expanding: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [rewrite(item, expanding) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: value for key, value in node.items() if key != "$defs"}
        reference = node.pop("$ref", None)
        siblings = {key: rewrite(value, expanding) for key, value in node.items()}
        if not isinstance(reference, str):
            return siblings
        name = reference.removeprefix(_REF_PREFIX)
        if name in expanding:
            kept.add(name)
            return {"$ref": reference, **siblings}
        return _with_siblings(rewrite(definitions[name], (*expanding, name)), siblings)

    result: dict[str, Any] = rewrite(schema, ())
    recursive: dict[str, Any] = {}
    while pending := sorted(kept - recursive.keys()):
        recursive |= {name: rewrite(definitions[name], (name,)) for name in pending}
    if recursive:
        result["$defs"] = recursive
    return result


def _references(node: Any) -> Iterator[str]:
    """Every `$ref` in `node` (a `$ref` that is not a string counts as an unknown one)."""
    if isinstance(node, list):
        for item in node:
            yield from _references(item)
    elif isinstance(node, dict):
        if "$ref" in node:
            reference = node["$ref"]
            yield reference if isinstance(reference, str) else ""
        for value in node.values():
            yield from _references(value)


#: keywords that only annotate: next to a `$ref` they can join the definition without changing what is valid
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"})


def _with_siblings(definition: Any, siblings: dict[str, Any]) -> Any:
    """What `{"$ref": ..., **siblings}` means, with the definition in place of the reference."""
    if not siblings:
        return definition
    if isinstance(definition, dict) and siblings.keys() <= _ANNOTATIONS:
        return {**definition, **siblings}
    return {**siblings, "allOf": [definition]}


def compact_output_schemas(mcp: MCPServer) -> None:
    """Publish every registered tool's output schema compacted (the SDK reads the field on each listing;
    results are still validated against the tool's pydantic model on the server)."""
    for tool in mcp._tool_manager.list_tools():
        metadata = tool.fn_metadata
        if metadata.output_schema is not None:
            metadata.output_schema = compact(metadata.output_schema)
