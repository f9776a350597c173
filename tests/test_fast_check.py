"""The validator's fast path, differential-tested against the full path it short-cuts.

Whenever the fast check accepts a value, the full path (convert, coerce, ``jsonschema``) must
accept it too and return an equal value, with the same types and the same containers copied.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_trio.tools import ArgumentValidator
from pi_trio.tools._fast_check import MISS

ORACLE = json.loads((Path(__file__).parent / "data" / "pi_validation_cases.json").read_text())
NOOP_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}


def _same(a: Any, b: Any) -> bool:
    """Equal JSON values with equal Python types (``1`` is not ``1.0``, NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _aliasing(result: Any, original: Any) -> Any:
    """Which containers of ``result`` are the very containers of ``original``."""
    if not isinstance(result, dict | list):
        return None
    if result is original:
        return "shared"
    if isinstance(result, dict) and isinstance(original, dict):
        return {k: _aliasing(v, original[k]) for k, v in result.items() if k in original}
    if isinstance(result, list) and isinstance(original, list) and len(result) == len(original):
        return [_aliasing(x, y) for x, y in zip(result, original, strict=True)]
    return "new"


def _check_agreement(validator: ArgumentValidator, value: Any) -> bool:
    """Assert the fast path agrees with the full path; True when the fast path answered."""
    fast = validator._fast
    if fast is None:
        return False
    got = fast(value)
    if got is MISS:
        return False
    expected = validator._validate_fully("t", value)  # must not raise
    assert _same(got, expected), (got, expected)
    assert _aliasing(got, value) == _aliasing(expected, value)
    return True


# --- schemas and values ----------------------------------------------------------------------

names = st.sampled_from(["a", "b", "c"])
small_text = st.text(alphabet="ab1 {[", max_size=3)
numbers = st.integers(-3, 3) | st.sampled_from([2**53, -(2**53) - 1, 10**400]) | st.floats()
json_values = st.recursive(
    st.none() | st.booleans() | numbers | small_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
limits = st.none() | st.integers(0, 3)
bounds = st.integers(-2, 2) | st.sampled_from([0.5, -1.5])


def _with(schema: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {**schema, **{k: v for k, v in optional.items() if v is not None}}


@st.composite
def string_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema = _with(
        {"type": "string"},
        minLength=draw(limits),
        maxLength=draw(limits),
        pattern=draw(st.none() | st.sampled_from(["^a", "1", "^$"])),
    )
    choice = draw(st.sampled_from(["plain", "enum", "const", "mixed_enum"]))
    if choice == "enum":
        schema["enum"] = draw(st.lists(small_text, min_size=1, max_size=3, unique=True))
    elif choice == "const":
        schema["const"] = draw(small_text)
    elif choice == "mixed_enum":
        schema["enum"] = ["a", 1, None]
    return schema


BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


@st.composite
def number_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema = {"type": draw(st.sampled_from(["number", "integer"]))}
    for keyword in draw(st.lists(st.sampled_from(BOUNDS), max_size=2, unique=True)):
        schema[keyword] = draw(bounds)
    return schema


leaf_schemas = st.one_of(
    string_schemas(),
    number_schemas(),
    st.sampled_from(
        [
            {"type": "boolean"},
            {"type": "null"},
            {},
            {"description": "anything", "default": 1},
            {"type": ["string", "null"]},  # unsupported shapes: the full path only
            {"type": "string", "format": "email"},
            {"type": "integer", "multipleOf": 2},
            {"const": 1},
        ]
    ),
)


def _compound(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def objects(draw: st.DrawFn) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": draw(st.dictionaries(names, children, max_size=3)),
        }
        required = draw(st.lists(names, max_size=3, unique=True))
        if required:
            schema["required"] = required
        extra = draw(st.sampled_from(["absent", "true", "false", "schema"]))
        if extra != "absent":
            schema["additionalProperties"] = (
                draw(children) if extra == "schema" else extra == "true"
            )
        return _with(schema, minProperties=draw(limits), maxProperties=draw(limits))

    @st.composite
    def arrays(draw: st.DrawFn) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array"}
        items = draw(st.sampled_from(["absent", "true", "schema"]))
        if items != "absent":
            schema["items"] = draw(children) if items == "schema" else True
        return _with(schema, minItems=draw(limits), maxItems=draw(limits))

    unions = st.lists(children, min_size=1, max_size=3)
    return st.one_of(
        objects(),
        arrays(),
        unions.map(lambda branches: {"anyOf": branches}),
        unions.map(lambda branches: {"anyOf": branches, "type": "string"}),
        children.map(lambda child: {"anyOf": [child, {"type": "null"}]}),
        unions.map(lambda branches: {"oneOf": branches}),
        unions.map(lambda branches: {"allOf": branches}),
    )


schemas = st.recursive(leaf_schemas, _compound, max_leaves=6)


def values_for(schema: Any) -> st.SearchStrategy[Any]:
    """Values shaped like ``schema`` (often valid, sometimes not), mixed with any JSON."""
    if not isinstance(schema, dict):
        return json_values
    shaped: st.SearchStrategy[Any] = json_values
    if "anyOf" in schema or "oneOf" in schema or "allOf" in schema:
        branches = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
        shaped = st.one_of([values_for(branch) for branch in branches])
    elif schema.get("type") == "object":
        properties = schema.get("properties", {})
        shaped = st.fixed_dictionaries(
            {}, optional={name: values_for(sub) for name, sub in properties.items()}
        )
    elif schema.get("type") == "array":
        shaped = st.lists(values_for(schema.get("items")), max_size=3)
    elif "enum" in schema:
        shaped = st.sampled_from(schema["enum"])
    elif "const" in schema:
        shaped = st.just(schema["const"])
    elif schema.get("type") == "string":
        shaped = small_text
    elif schema.get("type") in ("number", "integer"):
        edges = [schema[k] + d for k in BOUNDS if k in schema for d in (-1, -0.5, 0, 0.5, 1)]
        shaped = numbers | st.sampled_from(edges or [0])
    return st.one_of(shaped, shaped, json_values)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@pytest.mark.slow  # thousands of generated cases
@given(data=st.data(), schema=schemas, typebox=st.booleans())
def test_fast_path_agrees_with_the_full_path(
    data: st.DataObject, schema: dict[str, Any], typebox: bool
) -> None:
    try:
        validator = ArgumentValidator(schema, typebox_convert=typebox)
    except ValueError:  # e.g. an empty enum list
        return
    for _ in range(5):
        _check_agreement(validator, data.draw(values_for(schema)))


@settings(max_examples=120, deadline=None)
@given(data=st.data(), schema=leaf_schemas, typebox=st.booleans())
def test_fast_path_agrees_on_limits_and_enums(
    data: st.DataObject, schema: dict[str, Any], typebox: bool
) -> None:
    """Single-value schemas, many more of them: bounds and lengths are hit exactly."""
    test_fast_path_agrees_with_the_full_path.hypothesis.inner_test(data, schema, typebox)  # type: ignore[attr-defined]


@pytest.mark.parametrize("keyword", (*BOUNDS, "minLength", "maxLength"))
def test_fast_path_agrees_at_every_edge_of_a_limit(keyword: str) -> None:
    for json_type in ("number", "integer", "string"):
        for limit in (-1, 0, 0.5, 2):
            schema = {"type": json_type, keyword: limit}
            try:
                validators = [ArgumentValidator(schema, typebox_convert=tb) for tb in (False, True)]
            except ValueError:  # a negative or fractional length
                continue
            for delta in (-1, -0.5, 0, 0.5, 1):
                for value in (limit + delta, "x" * max(0, int(limit + delta)), True):
                    for validator in validators:
                        _check_agreement(validator, value)


@pytest.mark.parametrize("kind", ["typebox", "json"])
def test_fast_path_agrees_on_the_recorded_pi_cases(kind: str) -> None:
    validators: dict[str, ArgumentValidator] = {}
    answered = 0
    for case in ORACLE:
        if case["kind"] != kind:
            continue
        key = json.dumps(case["schema"])
        if key not in validators:
            validators[key] = ArgumentValidator(case["schema"], typebox_convert=kind == "typebox")
        answered += _check_agreement(validators[key], case["args"])
    assert answered > 20  # the fast path is exercised, not just skipped


@attrs.define
class Point:
    x: int
    y: int
    label: str | None = None


def test_fast_path_serves_common_shapes_without_the_full_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    noop = ArgumentValidator(NOOP_SCHEMA)
    points = ArgumentValidator.for_parameters(Point)
    typed = ArgumentValidator(
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "where"},
                "limit": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"type": "string", "enum": ["r", "w"]},
            },
            "required": ["path"],
            "additionalProperties": False,
        }
    )

    def forbidden(*args: Any) -> Any:
        raise AssertionError("the full path ran for valid arguments")

    monkeypatch.setattr(ArgumentValidator, "_validate_fully", forbidden)
    args: dict[str, Any] = {}
    result = noop.validate("noop", args)
    assert result == {} and result is not args  # a copy, like the full path returns
    assert points.validate("p", {"x": 1, "y": 2}) == Point(1, 2)
    assert points.validate("p", {"x": 1, "y": 2, "label": None}) == Point(1, 2)
    tags = ["a"]
    out = typed.validate("t", {"path": "/", "limit": 3, "tags": tags, "mode": "r"})
    assert out == {"path": "/", "limit": 3, "tags": ["a"], "mode": "r"}
    assert out["tags"] is not tags


def test_fast_path_misses_send_the_call_to_the_full_path() -> None:
    noop = ArgumentValidator(NOOP_SCHEMA)
    with pytest.raises(Exception, match="must not have additional properties"):
        noop.validate("noop", {"x": 1})
    points = ArgumentValidator.for_parameters(Point)
    assert points.validate("p", {"x": "1", "y": 2.0}) == Point(1, 2)  # coerced by the full path
    assert ArgumentValidator({"oneOf": [{"type": "string"}]})._fast is None
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    assert ArgumentValidator(draft7)._fast is None
