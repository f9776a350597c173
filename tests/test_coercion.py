"""The coercers: which members and items each of pi's two passes visits, and huge numbers.

pi's own coercion and TypeBox's convert walk objects and arrays with one walker
(``_schema_walk.map_properties``/``map_items``); these tests pin where the two passes differ
(tuples) and what both do (copies, ``dict[str, T]`` members). JSON integers beyond a double
(JavaScript reads them as Infinity) must get an answer, never an ``OverflowError``.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from pi_trio import ToolArgumentError, json_schema_for
from pi_trio.tools import ArgumentValidator
from pi_trio.tools._js import js_json_stringify, js_number_to_string

DRAFT_07 = "http://json-schema.org/draft-07/schema#"


def _coerced(schema: dict[str, Any], value: Any, *, typebox: bool) -> Any:
    return ArgumentValidator(schema, typebox_convert=typebox).coerce(value)


def test_pi_coerces_the_items_after_a_tuple_prefix() -> None:
    schema = {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "number"}}
    assert _coerced(schema, ["1", "2.5", "x"], typebox=False) == [1, 2.5, "x"]


def test_typebox_converts_a_tuple_prefix_only() -> None:
    # "1" for a boolean: TypeBox's convert reads it as true, pi's own coercion leaves it, so
    # what happens to the second item shows which pass visited it.
    schema = {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}}
    assert _coerced(schema, ["1", "1"], typebox=True) == [1, "1"]
    assert _coerced({"type": "array", "items": {"type": "boolean"}}, ["1"], typebox=True) == [True]


def test_only_pi_knows_the_draft_07_tuple_form() -> None:
    tuple_07 = {"$schema": DRAFT_07, "type": "array", "items": [{"type": "boolean"}]}
    assert _coerced(tuple_07, ["1"], typebox=True) == ["1"]  # TypeBox skips it, pi keeps "1"
    numbers_07 = {"$schema": DRAFT_07, "type": "array", "items": [{"type": "number"}]}
    assert _coerced(numbers_07, ["1", "2"], typebox=False) == [1, "2"]


def test_typebox_wraps_a_scalar_but_never_into_a_tuple() -> None:
    assert _coerced({"type": "array", "items": {"type": "integer"}}, "3", typebox=True) == [3]
    tuple_schema = {"type": "array", "prefixItems": [{"type": "integer"}]}
    assert _coerced(tuple_schema, "3", typebox=True) == "3"


def test_both_passes_coerce_dict_members_and_copy_containers() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "additionalProperties": {"type": "integer"},
    }
    for typebox in (False, True):
        inner = ["1"]
        value = {"name": 5, "n": "2", "list": inner}
        out = _coerced(schema, value, typebox=typebox)
        assert out == {"name": "5", "n": 2, "list": inner}
        assert value == {"name": 5, "n": "2", "list": ["1"]}  # the input is left untouched
        array_out = _coerced({"type": "array", "items": {}}, inner, typebox=typebox)
        assert array_out == inner and array_out is not inner


HUGE = 10**400  # json.loads reads such a literal as an int beyond every double
HUGE_VALUES = [HUGE, -HUGE, "0x" + "f" * 300, "0b" + "1" * 1100, "0o" + "7" * 400]


@pytest.mark.parametrize("typebox", [False, True])
@pytest.mark.parametrize(
    "prop",
    [
        {"type": "integer"},
        {"type": "number"},
        {"type": "string"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": ["integer", "null"]},
        {"type": "integer", "minimum": 1.5},
        {"const": 1},
    ],
)
def test_numbers_beyond_a_double_are_answered_not_crashed_on(
    prop: dict[str, Any], typebox: bool
) -> None:
    validator = ArgumentValidator(
        {"type": "object", "properties": {"n": prop}}, typebox_convert=typebox
    )
    for value in HUGE_VALUES:
        try:
            validator.validate("t", {"n": value})
        except ToolArgumentError as exc:
            assert "Received arguments:" in str(exc)


def test_numbers_beyond_a_double_print_as_javascript_prints_infinity() -> None:
    assert js_number_to_string(HUGE) == "Infinity"
    assert js_number_to_string(-HUGE) == "-Infinity"
    assert js_json_stringify({"n": HUGE}) == '{\n  "n": null\n}'  # JSON.stringify(Infinity)
    string = ArgumentValidator({"type": "object", "properties": {"s": {"type": "string"}}})
    assert string.validate("t", {"s": HUGE}) == {"s": "Infinity"}
    integer = ArgumentValidator({"type": "integer"}, typebox_convert=True)
    assert integer.validate("t", HUGE) == HUGE


def test_a_default_beyond_a_double_is_kept_in_the_schema() -> None:
    @attrs.define
    class Big:
        n: int = HUGE

    assert json_schema_for(Big)["properties"]["n"] == {"type": "integer", "default": HUGE}
