"""Tool argument validation and ``@tool``: pi's texts and coercions, schemas, the decorator."""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pi_trio as pt
import pi_trio.tools._validation as validation_module
from pi_trio import PiError, ToolArgumentError, json_schema_for, tool
from pi_trio.tools import ArgumentValidator
from pi_trio.tools._decorator import parse_docstring
from pi_trio.tools._validation import js_json_stringify, js_number_to_string

from .pi_fixtures import FIXTURE_DIR, requires_fixtures

HERE = Path(__file__).resolve().parent
FIXTURES = FIXTURE_DIR


async def _no_update(partial: pt.ToolResult) -> None:
    raise AssertionError("no update expected")


async def _invoke(t: pt.AgentTool, raw: dict[str, Any]) -> pt.ToolResult:
    return await t.run("call_1", t.validate(raw), _no_update)


def _text(result: pt.ToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, pt.TextContent))


def _fixture_results(name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(tool call arguments, toolResult message) pairs of one recorded pi run."""
    assert FIXTURES is not None
    data = json.loads((FIXTURES / name).read_text())
    calls = {
        block["id"]: block
        for step in data["script"]
        for block in step["content"]
        if block["type"] == "toolCall"
    }
    return [
        (calls[m["toolCallId"]]["arguments"], m)
        for m in data["finalMessages"]
        if m["role"] == "toolResult"
    ]


def _error_text(validator: ArgumentValidator, tool_name: str, args: Any) -> str:
    with pytest.raises(ToolArgumentError) as info:
        validator.validate(tool_name, args)
    return str(info.value)


@attrs.frozen
class Echo:
    text: str


@attrs.frozen
class Pair:
    a: str
    b: float


ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
PAIR_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


# --------------------------------------------------------------------------------------------
# pi's recorded texts (shared/fixtures) and a differential record of pi's validator
# --------------------------------------------------------------------------------------------


@requires_fixtures
@pytest.mark.parametrize("params", [Echo, ECHO_SCHEMA], ids=["attrs", "dict"])
def test_o07_echo_texts_match_pi(params: Any) -> None:
    validator = ArgumentValidator.for_parameters(params)
    results = _fixture_results("O07.json")
    assert [m["isError"] for _, m in results] == [False, True, True]
    for args, message in results:
        if message["isError"]:
            assert _error_text(validator, "echo", args) == message["content"][0]["text"]
        else:
            value = validator.validate("echo", args)
            text = value.text if isinstance(value, Echo) else value["text"]
            assert text == message["details"]["echoed"] == "5"


@requires_fixtures
def test_o07b_pair_texts_and_coercions_match_pi() -> None:
    by_dict = ArgumentValidator.for_parameters(PAIR_SCHEMA)
    by_class = ArgumentValidator.for_parameters(Pair)
    results = _fixture_results("O07b.json")
    assert len(results) == 4
    for args, message in results:
        expected = message["content"][0]["text"]
        if message["isError"]:
            assert _error_text(by_dict, "pair", args) == expected
            assert _error_text(by_class, "pair", args) == expected
        else:
            coerced = by_dict.validate("pair", args)
            assert json.dumps(coerced, separators=(",", ":")) == expected
            assert coerced == message["details"]["params"]
            instance = by_class.validate("pair", args)
            assert instance == Pair(a=coerced["a"], b=float(coerced["b"]))


def test_pi_message_literals() -> None:
    """The two texts quoted in the brief, independent of the fixture files."""
    pair = ArgumentValidator.for_parameters(Pair)
    assert _error_text(pair, "pair", {"a": {}, "b": "x"}) == (
        'Validation failed for tool "pair":\n  - a: must be string\n  - b: must be number\n\n'
        'Received arguments:\n{\n  "a": {},\n  "b": "x"\n}'
    )
    assert _error_text(ArgumentValidator.for_parameters(Echo), "echo", {}) == (
        'Validation failed for tool "echo":\n  - text: must have required properties text\n\n'
        "Received arguments:\n{}"
    )


ORACLE = json.loads((HERE / "data" / "pi_validation_cases.json").read_text())


@pytest.mark.parametrize("kind", ["typebox", "json"])
def test_matches_recorded_pi_validator(kind: str) -> None:
    """626 cases run through pi-ai 0.73.1's validateToolArguments (typebox 1.4.3) by node.

    "typebox" cases used a TypeBox-built schema (pi: Value.Convert + JSON-schema coercion; here:
    ``typebox_convert=True``, what attrs classes get); "json" cases a plain JSON-schema dict.
    """
    validators: dict[str, ArgumentValidator] = {}
    mismatches = []
    cases = [c for c in ORACLE if c["kind"] == kind]
    assert len(cases) > 300
    for case in cases:
        key = json.dumps(case["schema"])
        if key not in validators:
            validators[key] = ArgumentValidator(
                case["schema"], typebox_convert=kind == "typebox", coerce_json_strings=False
            )
        try:
            got: dict[str, Any] = {"ok": validators[key].validate(case["tool"], case["args"])}
        except ToolArgumentError as exc:
            got = {"error": str(exc)}
        expected = case["expected"]
        if "ok" in expected and "ok" in got:
            same = js_json_stringify(got["ok"]) == js_json_stringify(expected["ok"])
        else:
            same = got == expected
        if not same and not _pi_union_quirk(case, expected, got):
            mismatches.append((case["id"], case["args"], expected, got))
    assert mismatches == []


def _pi_union_quirk(case: dict[str, Any], expected: dict[str, Any], got: dict[str, Any]) -> bool:
    """The one known difference: pi re-coerces a value that already matches an anyOf branch.

    pi turns "12" for ``anyOf: [number, string]`` into 12 (and null for ``[number, null]`` into
    0, see test_union_keeps_a_value_that_already_matches); pi_trio keeps the valid value.
    """
    if "ok" not in expected or "ok" not in got:
        return False
    properties = case["schema"]["properties"]
    differing = [k for k in got["ok"] if got["ok"][k] != expected["ok"].get(k)]
    return bool(differing) and all(
        "anyOf" in properties.get(k, {}) and got["ok"][k] == case["args"][k] for k in differing
    )


@pytest.mark.parametrize("kind", ["typebox", "json"])
def test_union_keeps_a_value_that_already_matches(kind: str) -> None:
    """Better than pi 0.73.1, which gives {"a": 0, "b": "", "u": 12} here (recorded with node).

    pi coerces towards each anyOf branch in turn before checking the value, so an optional
    number can never be null. pi_trio keeps a value that already matches a branch.
    """
    schema = _props(
        a={"anyOf": [{"type": "number"}, {"type": "null"}]},
        b={"anyOf": [{"type": "string"}, {"type": "null"}]},
        u={"anyOf": [{"type": "number"}, {"type": "string"}]},
    )
    validator = ArgumentValidator(schema, typebox_convert=kind == "typebox")
    assert validator.validate("t", {"a": None, "b": None, "u": "12"}) == {
        "a": None,
        "b": None,
        "u": "12",
    }
    assert validator.validate("t", {"a": "5", "b": 5, "u": True}) == {"a": 5, "b": "5", "u": 1}


# --------------------------------------------------------------------------------------------
# Coercion (plain JSON-schema dicts: pi's coerceWithJsonSchema)
# --------------------------------------------------------------------------------------------


def _validate(schema: dict[str, Any], args: dict[str, Any], **kw: Any) -> Any:
    return ArgumentValidator(schema, **kw).validate("t", args)


def _props(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize(
    ("prop", "given_value", "expected"),
    [
        ({"type": "string"}, 12, "12"),
        ({"type": "string"}, 1.5, "1.5"),
        ({"type": "string"}, 1.0, "1"),
        ({"type": "string"}, True, "true"),
        ({"type": "string"}, None, ""),
        ({"type": "number"}, "12", 12),
        ({"type": "number"}, " 0x10 ", 16),
        ({"type": "number"}, "1e3", 1000),
        ({"type": "number"}, None, 0),
        ({"type": "number"}, False, 0),
        ({"type": "integer"}, "7", 7),
        ({"type": "boolean"}, "true", True),
        ({"type": "boolean"}, "false", False),
        ({"type": "boolean"}, 1, True),
        ({"type": "boolean"}, 0, False),
        ({"type": "null"}, "", None),
        ({"type": "null"}, 0, None),
        ({"anyOf": [{"type": "number"}, {"type": "string"}]}, True, 1),
        ({"anyOf": [{"type": "string"}, {"type": "number"}]}, None, ""),
        ({"type": ["boolean", "number"]}, "1", 1),
        ({"type": ["string", "null"]}, "", ""),
    ],
)
def test_dict_schema_coercions(prop: dict[str, Any], given_value: Any, expected: Any) -> None:
    result = _validate(_props(v=prop), {"v": given_value})["v"]
    assert js_json_stringify(result) == js_json_stringify(expected)
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("prop", "bad"),
    [
        ({"type": "integer"}, "1.5"),  # pi's JSON-schema coercion never truncates
        ({"type": "boolean"}, "TRUE"),  # only exact "true"/"false"
        ({"type": "number"}, "abc"),
        ({"type": "number"}, ""),
        ({"type": "array", "items": {"type": "number"}}, 5),  # no wrapping for plain schemas
    ],
)
def test_dict_schema_leaves_unconvertible_values(prop: dict[str, Any], bad: Any) -> None:
    with pytest.raises(ToolArgumentError, match="  - v: must be "):
        _validate(_props(v=prop), {"v": bad})


def test_typebox_pass_is_more_lenient_than_dict_pass() -> None:
    """TypeBox's Value.Convert (attrs classes) truncates, wraps and reads TRUE like pi does."""
    schema = _props(
        i={"type": "integer"},
        b={"type": "boolean"},
        a={"type": "array", "items": {"type": "number"}},
        s={"type": "string"},
    )
    args = {"i": "-2.7", "b": "TRUE", "a": "3", "s": None}
    out = ArgumentValidator(schema, typebox_convert=True).validate("t", args)
    assert out == {"i": -2, "b": True, "a": [3], "s": "null"}
    assert args == {"i": "-2.7", "b": "TRUE", "a": "3", "s": None}  # input untouched


def test_nested_objects_and_arrays_are_coerced_and_reported_with_paths() -> None:
    schema = {
        "type": "object",
        "properties": {
            "outer": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"id": {"type": "integer"}, "on": {"type": "boolean"}},
                            "required": ["id"],
                        },
                    }
                },
            }
        },
    }
    ok = _validate(schema, {"outer": {"items": [{"id": "3", "on": "false"}, {"id": 4}]}})
    assert ok == {"outer": {"items": [{"id": 3, "on": False}, {"id": 4}]}}
    text = _error_text(ArgumentValidator(schema), "t", {"outer": {"items": [{}, {"id": "x"}]}})
    assert text.splitlines()[1:3] == [
        "  - outer.items.0.id: must have required properties id",
        "  - outer.items.1.id: must be integer",
    ]


def test_additional_properties_are_kept_and_coerced_by_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "number"},
    }
    assert _validate(schema, {"a": 1, "x": "2"}) == {"a": "1", "x": 2}
    closed: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    closed["additionalProperties"] = False
    assert _error_text(ArgumentValidator(closed), "t", {"a": "x", "b": 1}).splitlines()[1] == (
        "  - root: must not have additional properties"
    )


def test_union_errors_list_every_branch_then_the_union() -> None:
    schema = _props(v={"anyOf": [{"type": "string"}, {"type": "null"}]})
    lines = _error_text(ArgumentValidator(schema), "t", {"v": {"k": 1}}).splitlines()
    assert lines[1:4] == [
        "  - v: must be string",
        "  - v: must be null",
        "  - v: must match a schema in anyOf",
    ]


def test_one_of_and_const_messages() -> None:
    schema = _props(v={"oneOf": [{"type": "integer"}, {"type": "number"}]}, c={"const": "on"})
    lines = _error_text(ArgumentValidator(schema), "t", {"v": 3, "c": "off"}).splitlines()
    assert lines[1:3] == [
        "  - v: must match exactly one schema in oneOf",
        "  - c: must be equal to constant",
    ]


def test_received_arguments_are_printed_like_javascript() -> None:
    text = _error_text(ArgumentValidator(ECHO_SCHEMA), "echo", {"n": 1.0, "e": 1e21, "u": "é"})
    assert text.endswith('{\n  "n": 1,\n  "e": 1e+21,\n  "u": "é"\n}')


@pytest.mark.parametrize(
    ("number", "text"),
    [(1.0, "1"), (0.1, "0.1"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"),
     (0.000001, "0.000001"), (-2.5, "-2.5"), (123456789012, "123456789012"), (-0.0, "0")],
)  # fmt: skip
def test_js_number_to_string(number: float, text: str) -> None:
    assert js_number_to_string(number) == text


# --------------------------------------------------------------------------------------------
# JSON strings where an array/object is expected (extension over pi)
# --------------------------------------------------------------------------------------------


def test_json_string_is_parsed_where_array_or_object_expected() -> None:
    schema = _props(
        tags={"type": "array", "items": {"type": "string"}},
        opts={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    out = _validate(schema, {"tags": '["a", 2]', "opts": '{"n": "5"}'})
    assert out == {"tags": ["a", "2"], "opts": {"n": 5}}


def test_json_string_parsing_can_be_disabled_to_get_pis_error() -> None:
    schema = _props(tags={"type": "array", "items": {"type": "number"}})
    text = _error_text(ArgumentValidator(schema, coerce_json_strings=False), "t", {"tags": "[1]"})
    assert text.splitlines()[1] == "  - tags: must be array"


def test_json_string_of_wrong_kind_or_invalid_json_is_not_parsed() -> None:
    schema = _props(tags={"type": "array"})
    for bad in ('{"a": 1}', "[1, 2", "NaN"):
        assert "tags: must be array" in _error_text(ArgumentValidator(schema), "t", {"tags": bad})


# --------------------------------------------------------------------------------------------
# attrs classes: schema generation and structuring
# --------------------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@attrs.frozen
class Point:
    """A point on the plane.

    More text that is not part of the summary.
    """

    x: int
    y: int = 0


@attrs.frozen
class Shape:
    name: str = attrs.field(metadata={"description": "Display name"})
    points: list[Point]
    color: Color = Color.RED
    mode: Literal["fill", "stroke"] = "fill"
    scale: float | None = None
    tags: tuple[str, ...] = ()
    pair: tuple[int, str] | None = None
    meta: dict[str, int] = attrs.Factory(dict)
    note: Annotated[str, "Free text"] = ""


def test_json_schema_for_attrs_class() -> None:
    point = {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
        "description": "A point on the plane.",
    }
    assert json_schema_for(Shape) == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Display name"},
            "points": {"type": "array", "items": point},
            "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
            "mode": {"type": "string", "enum": ["fill", "stroke"], "default": "fill"},
            "scale": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
            "pair": {
                "anyOf": [
                    {
                        "type": "array",
                        "prefixItems": [{"type": "integer"}, {"type": "string"}],
                        "minItems": 2,
                        "maxItems": 2,
                    },
                    {"type": "null"},
                ],
                "default": None,
            },
            "meta": {"type": "object", "additionalProperties": {"type": "integer"}},
            "note": {"type": "string", "description": "Free text", "default": ""},
        },
        "required": ["name", "points"],
    }


def test_attrs_class_is_structured_after_coercion() -> None:
    validator = ArgumentValidator.for_parameters(Shape)
    shape = validator.validate(
        "shape",
        {
            "name": 7,
            "points": [{"x": "1", "y": 2.0}, {"x": 3}],
            "color": "green",
            "scale": "2",
            "tags": ["a", 1],
            "pair": [1, 2],
            "meta": {"k": "4"},
            "unknown": True,
        },
    )
    assert shape == Shape(
        name="7",
        points=[Point(1, 2), Point(3)],
        color=Color.GREEN,
        scale=2.0,
        tags=("a", "1"),
        pair=(1, "2"),
        meta={"k": 4},
    )
    assert isinstance(shape.points[0].x, int)
    assert shape.color is Color.GREEN


def test_attrs_class_errors_use_pis_format() -> None:
    validator = ArgumentValidator.for_parameters(Shape)
    text = _error_text(validator, "shape", {"points": [{"y": 1}], "color": "blue", "mode": 3})
    assert text.splitlines()[:5] == [
        'Validation failed for tool "shape":',
        "  - name: must have required properties name",
        "  - points.0.x: must have required properties x",
        "  - color: must be equal to one of the allowed values",
        "  - mode: must be equal to one of the allowed values",
    ]


def test_validator_is_cached_per_class_and_built_once() -> None:
    first = ArgumentValidator.for_parameters(Shape)
    assert ArgumentValidator.for_parameters(Shape) is first
    assert first.params_type is Shape
    assert first.schema == json_schema_for(Shape)


def test_per_call_path_does_not_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    validator = ArgumentValidator(_props(v={"anyOf": [{"type": "number"}, {"type": "string"}]}))

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("rebuilt on the per-call path")

    monkeypatch.setattr(validation_module, "_ordered_schema", forbidden)
    monkeypatch.setattr(validation_module, "_Checks", forbidden)
    monkeypatch.setattr(validation_module, "json_schema_for", forbidden)
    assert validator.validate("t", {"v": True}) == {"v": 1}
    with pytest.raises(ToolArgumentError):
        validator.validate("t", {"v": []})


@attrs.define
class Node:
    child: Node | None = None


def test_schema_generation_rejects_what_json_cannot_express() -> None:
    @attrs.define
    class Bad:
        when: bytes

    with pytest.raises(TypeError, match="recursive"):
        json_schema_for(Node)
    with pytest.raises(TypeError, match="unsupported"):
        json_schema_for(Bad)
    with pytest.raises(TypeError):
        json_schema_for(dict)
    with pytest.raises(ValueError, match="invalid tool parameters schema"):
        ArgumentValidator({"type": "object", "properties": {"a": {"type": "strin"}}})


def test_tool_argument_error_is_a_pi_error_with_details() -> None:
    with pytest.raises(PiError) as info:
        ArgumentValidator.for_parameters(Pair).validate("pair", {"a": "x", "b": []})
    assert isinstance(info.value, ToolArgumentError)
    assert info.value.tool_name == "pair"
    assert info.value.problems == ("b: must be number",)


# --------------------------------------------------------------------------------------------
# @tool
# --------------------------------------------------------------------------------------------


async def test_tool_decorator_google_docstring_sync() -> None:
    @tool
    def add(a: int, b: int = 2, *, label: str | None = None) -> str:
        """Add two numbers.

        Used by the calculator.

        Args:
            a: First operand.
            b (int): Second operand,
                defaults to two.
            label: Optional label.

        Returns:
            The sum as text.
        """
        return f"{label or 'sum'}={a + b}"

    assert add.name == "add"
    assert add.label == "add"
    assert add.description == "Add two numbers."
    assert add.is_async is False
    assert add.execution_mode is None
    assert add.spec.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "First operand."},
            "b": {
                "type": "integer",
                "description": "Second operand, defaults to two.",
                "default": 2,
            },
            "label": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "Optional label.",
                "default": None,
            },
        },
        "required": ["a"],
    }
    params = add.validate({"a": "40"})
    assert (params.a, params.b, params.label) == (40, 2, None)
    assert _text(await _invoke(add, {"a": "40"})) == "sum=42"
    assert "a: must have required properties a" in _error_text(add.validator, "add", {})


async def test_tool_decorator_async_numpy_docstring_and_options() -> None:
    @tool(name="move", label="Move shape", execution_mode="sequential")
    async def move_shape(shape: Shape, by: Annotated[Point, "Offset to add"]) -> Shape:
        """Move a shape.

        Parameters
        ----------
        shape : Shape
            The shape to move.
        by : Point
            Ignored: Annotated wins.
        """
        return attrs.evolve(shape, points=[Point(p.x + by.x, p.y + by.y) for p in shape.points])

    assert (move_shape.name, move_shape.label) == ("move", "Move shape")
    assert move_shape.description == "Move a shape."
    assert move_shape.is_async is True
    assert move_shape.execution_mode == "sequential"
    props = move_shape.spec.parameters["properties"]
    assert props["shape"]["description"] == "The shape to move."
    assert props["by"]["description"] == "Offset to add"
    raw = {"shape": {"name": "s", "points": '[{"x": 1}]'}, "by": {"x": 1, "y": "1"}}
    assert move_shape.validate(raw).by == Point(1, 1)
    result = await _invoke(move_shape, raw)
    assert result.details.points == [Point(2, 1)]
    assert json.loads(_text(result))["points"] == [{"x": 2, "y": 1}]


async def test_tool_decorator_sphinx_docstring_and_description_override() -> None:
    @tool(description="Custom.")
    def greet(who: str, times: int = 1) -> str:
        """Say hello.

        :param who: Person to greet.
        :param int times: How often.
        """
        return ("hi " + who + " ") * times

    assert greet.description == "Custom."
    props = greet.spec.parameters["properties"]
    assert props["who"]["description"] == "Person to greet."
    assert props["times"]["description"] == "How often."
    assert _text(await _invoke(greet, {"who": 5, "times": "2"})) == "hi 5 hi 5 "


def test_tool_decorator_rejects_variadic_and_positional_only() -> None:
    def star(*items: int) -> None: ...
    def kw(**items: int) -> None: ...
    def posonly(a: int, /) -> None: ...

    for fn in (star, kw, posonly):
        with pytest.raises(TypeError):
            tool(fn)
    with pytest.raises(ValueError, match="execution_mode"):
        tool(execution_mode="later")(kw)  # type: ignore[call-overload]


async def test_tool_without_docstring_or_annotations() -> None:
    @tool
    def anything(x, y=None):  # type: ignore[no-untyped-def]
        return (x, y)

    assert anything.description == ""
    assert anything.spec.parameters == {
        "type": "object",
        "properties": {"x": {}, "y": {"default": None}},
        "required": ["x"],
    }
    result = await _invoke(anything, {"x": [1]})
    assert result.details == ([1], None)


def test_parse_docstring_stops_summary_at_sections() -> None:
    summary, params = parse_docstring("Do it\nnow.\nArgs:\n    a: thing\nRaises:\n    KeyError")
    assert summary == "Do it now."
    assert params == {"a": "thing"}


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(args=st.dictionaries(st.sampled_from(["name", "points", "color", "x"]), json_values))
def test_validate_never_raises_anything_else_and_never_mutates(args: dict[str, Any]) -> None:
    snapshot = json.dumps(args, sort_keys=True)
    try:
        result = ArgumentValidator.for_parameters(Shape).validate("shape", args)
    except ToolArgumentError as exc:
        text = str(exc)
        assert text.startswith('Validation failed for tool "shape":\n  - ')
        assert text.endswith("\n\nReceived arguments:\n" + js_json_stringify(args))
    else:
        assert isinstance(result, Shape)
    assert json.dumps(args, sort_keys=True) == snapshot


points = st.builds(Point, x=st.integers(-1000, 1000), y=st.integers(-1000, 1000))
shapes = st.builds(
    Shape,
    name=st.text(max_size=5),
    points=st.lists(points, max_size=3),
    color=st.sampled_from(Color),
    mode=st.sampled_from(["fill", "stroke"]),
    scale=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    tags=st.lists(st.text(max_size=3), max_size=3).map(tuple),
    meta=st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=3),
)


@settings(max_examples=100, deadline=None)
@given(shape=shapes)
def test_unstructured_instances_round_trip(shape: Shape) -> None:
    raw = attrs.asdict(
        shape, value_serializer=lambda _i, _a, v: v.value if isinstance(v, Color) else v
    )
    raw["tags"] = list(raw["tags"])
    assert ArgumentValidator.for_parameters(Shape).validate("shape", raw) == shape


@given(number=st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_text_parses_back_to_the_same_number(number: float) -> None:
    text = js_number_to_string(number)
    assert float(text) == number or (number == 0 and text == "0")
    assert not text.endswith(".0")
    assert math.isfinite(float(text))
