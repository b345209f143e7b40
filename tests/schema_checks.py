"""Each tool output schema checked against the JSON Schema metaschema once per test process, not once per client.

The SDK client checks a tool's output schema against the Draft 2020-12 metaschema the first time a session
meets the tool (10 to 60 ms of CPU for one of ours), then validates every result against it. The tests open a
client per test, so the same schemas were checked thousands of times: about a tenth of the CPU of the
in-process tests. A schema found valid once in this process is not checked again; one that fails is checked
(and fails) every time, and every result is still validated against its schema.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema.validators import Draft202012Validator


def check_each_schema_once() -> None:
    """Make `Draft202012Validator.check_schema` remember the schemas it found valid (see the module docstring)."""
    check = Draft202012Validator.check_schema
    valid: set[str] = set()

    def check_once(cls: type[Draft202012Validator], /, schema: Any, **options: Any) -> None:
        if options:  # a format checker can change the verdict: checked each time, as before
            check(schema, **options)
            return
        key = json.dumps(schema, sort_keys=True)
        if key not in valid:
            check(schema)
            valid.add(key)

    Draft202012Validator.check_schema = classmethod(check_once)
