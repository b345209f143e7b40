"""Compacted output schemas accept exactly what the originals accept, and are what the server publishes."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for
from pydantic import BaseModel, Field, TypeAdapter

from imap_mcp.server.config import load_settings
from imap_mcp.server.reading.search import SearchPage
from imap_mcp.server.serving.app import build_server
from imap_mcp.server.tools.output_schemas import compact


class Thread(BaseModel):
    """Recursive: its definition must stay a `$ref`."""

    subject: str | None
    replies: list[Thread] = Field(default_factory=list)


class Shelf(BaseModel):
    page: SearchPage | None
    threads: list[Thread]
    count: int | None = None


def tool_output_models() -> dict[str, Any]:
    """Each tool's output model, as the server registers it (before its schema is compacted)."""
    settings = load_settings({"IMAP_HOST": "127.0.0.1", "IMAP_USERNAME": "u", "IMAP_PASSWORD": "p"})
    tools = build_server(settings)._tool_manager.list_tools()
    return {tool.name: tool.fn_metadata.output_model for tool in tools if tool.fn_metadata.output_model is not None}


TOOL_MODELS = tool_output_models()
SCHEMAS = {
    **{f"tool {name}": TypeAdapter(model).json_schema() for name, model in TOOL_MODELS.items()},
    **{model.__name__: TypeAdapter(model).json_schema() for model in (SearchPage, Thread, Shelf)},
}


def property_names(node: object) -> set[str]:
    if isinstance(node, list):
        return {name for item in node for name in property_names(item)}
    if not isinstance(node, dict):
        return set()
    own = set(node["properties"]) if isinstance(node.get("properties"), dict) else set()
    return own | {name for value in node.values() for name in property_names(value)}


#: the property names of the schemas above, so generated objects reach their properties
KEYS = sorted({name for schema in SCHEMAS.values() for name in property_names(schema)})
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", "\\Seen"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=14),
    max_leaves=40,
)


def type_lists(node: object) -> Any:
    """Every `type` in `node` that is a list of types (a spelling single-`type` dialects cannot read)."""
    if isinstance(node, list):
        for item in node:
            yield from type_lists(item)
    elif isinstance(node, dict):
        if isinstance(node.get("type"), list):
            yield node["type"]
        for value in node.values():
            yield from type_lists(value)


def valid(schema: dict[str, Any], value: object) -> bool:
    is_valid: bool = validator_for(schema)(schema).is_valid(value)
    return is_valid


def test_definitions_are_inlined_and_optional_fields_keep_one_type_per_branch() -> None:
    compacted = compact(SCHEMAS["SearchPage"])
    assert "$defs" not in compacted and "$ref" not in json.dumps(compacted)
    summary = compacted["properties"]["messages"]["items"]
    assert summary["properties"]["date"]["anyOf"] == [{"type": "string"}, {"type": "null"}]


def test_a_recursive_definition_stays_a_reference() -> None:
    compacted = compact(SCHEMAS["Shelf"])
    assert set(compacted["$defs"]) == {"Thread"}
    thread = compacted["properties"]["threads"]["items"]  # inlined once, then a reference to itself
    assert thread["properties"]["replies"]["items"] == {"$ref": "#/$defs/Thread"}
    assert compacted["$defs"]["Thread"]["properties"]["replies"]["items"] == {"$ref": "#/$defs/Thread"}
    nested = {"page": None, "threads": [{"subject": "a", "replies": [{"subject": None, "replies": []}]}]}
    assert valid(compacted, nested) and not valid(compacted, {"page": None, "threads": [{"replies": []}]})


@settings(max_examples=600, deadline=None)
@given(name=st.sampled_from(sorted(SCHEMAS)), value=JSON)
def test_a_compacted_schema_accepts_what_the_original_accepts(name: str, value: object) -> None:
    schema = SCHEMAS[name]
    assert valid(compact(schema), value) == valid(schema, value)


def test_valid_pages_stay_valid() -> None:
    message = {
        "id": "imap.SU5CT1g.1.2",
        "uid": 2,
        "mailbox": "INBOX",
        "date": None,
        "from": "a@b",
        "to": [],
        "subject": "",
        "flags": ["\\Seen"],
        "unread": False,
        "flagged": False,
        "size": 3,
        "has_attachments": False,
    }
    page = {"mailbox": "INBOX", "total": 1, "offset": 0, "messages": [message]}
    compacted = compact(SCHEMAS["SearchPage"])
    assert valid(compacted, page) and valid(compacted, {**page, "messages": [{**message, "unreadable": "why"}]})
    assert not valid(compacted, {**page, "messages": [{**message, "date": 5}]})


def references(node: object) -> set[str]:
    if isinstance(node, list):
        return {ref for item in node for ref in references(item)}
    if not isinstance(node, dict):
        return set()
    own = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
    return own | {ref for value in node.values() for ref in references(value)}


def test_every_tool_schema_compacts_to_a_valid_schema_whose_references_resolve() -> None:
    assert len(TOOL_MODELS) >= 10
    for name, schema in SCHEMAS.items():
        compacted = compact(schema)
        validator_for(compacted).check_schema(compacted)
        defined = {f"#/$defs/{definition}" for definition in compacted.get("$defs", {})}
        assert references(compacted) <= defined, name


def test_a_schema_with_a_reference_outside_its_definitions_is_left_as_written() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "b": {"$ref": "#/properties/a"}},
    }
    assert compact(schema) == schema
    assert compact({"$defs": {}, "properties": {"c": {"$ref": "#/$defs/Missing"}}})["properties"] == {
        "c": {"$ref": "#/$defs/Missing"}
    }


def test_the_server_publishes_compacted_output_schemas() -> None:
    settings = load_settings({"IMAP_HOST": "127.0.0.1", "IMAP_USERNAME": "u", "IMAP_PASSWORD": "p"})
    tools = anyio.run(build_server(settings).list_tools)
    published = {tool.name: tool.output_schema for tool in tools if tool.output_schema}
    assert "search_messages" in published
    for name, schema in published.items():
        assert not list(type_lists(schema)), name
    assert "$defs" not in published["search_messages"]
