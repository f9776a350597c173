"""The coercers' shared walker: which members and items each of pi's two passes visits.

pi's own coercion and TypeBox's convert walk objects and arrays with one walker
(``_schema_walk.map_properties``/``map_items``); these tests pin where the two passes differ
(tuples) and what both do (copies, ``dict[str, T]`` members).
"""

from __future__ import annotations

from typing import Any

from pi_trio.tools import ArgumentValidator

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
