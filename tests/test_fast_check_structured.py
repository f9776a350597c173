"""The fast path for attrs-class tools: same structured result, or same error, as the full path.

``test_fast_check`` checks the fast path's dict against the full path's dict. Here the whole
``validate`` is compared for random attrs classes: whenever the fast check accepts a value,
``validate`` (fast check, then cattrs) must give what ``_validate_fully`` (convert, coerce,
``jsonschema``, then cattrs) gives: an equal instance with equal field types, or a
``ToolArgumentError`` with the same text.
"""

from __future__ import annotations

import enum
import math
from typing import Any, Literal

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_trio import ToolArgumentError
from pi_trio.tools import ArgumentValidator
from pi_trio.tools._fast_check import MISS


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.define
class Inner:
    a: int
    tags: list[str] = attrs.Factory(list)


FIELD_TYPES: list[Any] = [
    int,
    float,
    str,
    bool,
    int | None,
    str | None,
    float | str,
    list[int],
    list[str],
    dict[str, int],
    Literal["a", "b"],
    Literal[1, 2],
    Color,
    Inner,
    Inner | None,
    list[Inner],
    tuple[int, str],
    set[str],
    Any,
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats()
    | st.sampled_from(["", "a", "b", "red", "1", "1.5", "true", 2**53, 1.0])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner),
    max_leaves=6,
)
inner_values = st.fixed_dictionaries(
    {"a": st.integers(-2, 2) | json_values},
    optional={"tags": st.lists(st.sampled_from(["x", "y"]), max_size=2) | json_values},
)


def _values_for(tp: Any) -> st.SearchStrategy[Any]:
    """Values of roughly the right shape for a field type, mixed with any JSON."""
    shaped: dict[Any, st.SearchStrategy[Any]] = {
        int: st.integers(-5, 5),
        float: st.floats(allow_nan=False) | st.integers(-5, 5),
        str: st.text(max_size=3),
        bool: st.booleans(),
        Inner: inner_values,
        Color: st.sampled_from(["red", "blue", "green"]),
    }
    if tp in shaped:
        return shaped[tp] | json_values
    return json_values | st.lists(scalars | inner_values, max_size=3)


@st.composite
def classes_and_values(draw: st.DrawFn) -> tuple[type, dict[str, Any]]:
    names = draw(st.lists(st.sampled_from("pqrs"), min_size=1, max_size=3, unique=True))
    fields: dict[str, Any] = {}
    value: dict[str, Any] = {}
    for name in names:
        tp = draw(st.sampled_from(FIELD_TYPES))
        optional = draw(st.booleans())
        if optional:
            fields[name] = attrs.field(type=tp | None, default=None, kw_only=True)
        else:
            fields[name] = attrs.field(type=tp, kw_only=True)
        if not optional or draw(st.booleans()):
            value[name] = draw(_values_for(tp))
    cls = attrs.make_class("Params", fields)
    return cls, value


def _same(a: Any, b: Any) -> bool:
    """Equal values with equal Python types, attrs instances field by field."""
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, set | frozenset):
        return a == b
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _outcome(run: Any) -> tuple[str, Any]:
    try:
        return "value", run()
    except ToolArgumentError as exc:
        return "error", str(exc)


@pytest.mark.slow  # thousands of generated cases
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=classes_and_values())
def test_fast_path_gives_the_full_paths_structured_result(case: tuple[type, Any]) -> None:
    cls, value = case
    validator = ArgumentValidator.for_parameters(cls)
    fast = validator._fast
    if fast is None or fast(value) is MISS:
        return
    got = _outcome(lambda: validator.validate("t", value))
    expected = _outcome(lambda: validator._validate_fully("t", value))
    assert got[0] == expected[0], (got, expected)
    if got[0] == "error":
        assert got[1] == expected[1]
    else:
        assert _same(got[1], expected[1]), (got, expected)


def test_the_fast_path_serves_most_generated_classes() -> None:
    """The property above is not vacuous: the fast check answers for these classes."""

    @attrs.define
    class Mixed:
        n: int
        s: str | None = None
        color: Color = Color.RED
        inner: Inner | None = None
        pair: tuple[int, str] | None = None

    validator = ArgumentValidator.for_parameters(Mixed)
    assert validator._fast is not None
    value = {"n": 1, "s": None, "color": "blue", "inner": {"a": 2, "tags": ["x"]}}
    assert validator._fast(value) is not MISS
    assert validator.validate("t", value) == Mixed(1, None, Color.BLUE, Inner(2, ["x"]))
