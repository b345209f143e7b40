"""The tests' once-per-process metaschema check (`schema_checks.py`) still refuses every invalid schema."""

from __future__ import annotations

import pytest
from jsonschema import SchemaError
from jsonschema.validators import Draft202012Validator, validator_for


def test_an_invalid_schema_is_refused_every_time_and_a_valid_one_passes() -> None:
    valid = {"type": "object", "properties": {"uid": {"type": "integer", "minimum": 1}}}
    invalid = {"type": "object", "properties": {"uid": {"type": 5}}}
    for _ in range(2):
        validator_for(valid).check_schema(valid)
        with pytest.raises(SchemaError):
            validator_for(invalid).check_schema(invalid)


def test_results_are_still_validated_against_a_schema_already_checked() -> None:
    schema = {"type": "object", "properties": {"uid": {"type": "integer"}}, "required": ["uid"]}
    Draft202012Validator.check_schema(schema)
    Draft202012Validator.check_schema(schema)
    assert list(Draft202012Validator(schema).iter_errors({"uid": 7})) == []
    assert [error.validator for error in Draft202012Validator(schema).iter_errors({"uid": "seven"})] == ["type"]
