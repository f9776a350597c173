"""The validator's fast path: "already valid, nothing to coerce", checked in plain Python.

Most tool calls arrive well formed, and for those the full path (TypeBox's convert, pi's
coercion, then ``jsonschema``) returns a copy of the arguments with nothing changed, at ~10 µs a
call. :func:`compile_fast_check` turns the common schema shapes into nested closures, once per
validator, that return exactly what the full path would return (containers copied the way the
coercers copy them) or :data:`MISS` when the value is not *certainly* valid and unchanged.

A miss only sends the call to the full path, which decides and writes pi's error text, so every
check here may be conservative but never lenient. Supported: a single ``type`` with, per type,
``minLength``/``maxLength``/``pattern`` (string), ``minimum``/``maximum``/``exclusiveMinimum``/
``exclusiveMaximum`` (number, integer), ``items``/``minItems``/``maxItems`` (array),
``properties``/``required``/``additionalProperties``/``minProperties``/``maxProperties``
(object), string-valued ``enum``/``const``, and ``anyOf`` on its own (``T | None``; branches
that cannot be checked are skipped). Any other keyword that ``jsonschema`` evaluates (``oneOf``,
``$ref``, ``format``, ...) disables the fast path for the whole schema; annotations
(``description``, ``default``, ``title``, ...) are ignored, as they are by the full path. Only
draft 2020-12 schemas (the default) are compiled.

Why hand-written and not a compiled validator such as ``fastjsonschema``: the fast path must
also prove that pi's coercions change nothing (an ``integer`` must be an ``int``, not ``1.0``)
and copy the containers the coercers copy, so a compiled validator still needs this walk after
its own. Measured (fastjsonschema 2.22.3 plus that walk, against this module, back to back,
callgrind): the S1 schema (an empty closed object) 4,531 against 4,237 instructions a call, an
attrs class with ``int | None`` fields 26,474 against 12,837 (its ``anyOf`` goes through
exceptions), and the S1 loop ~0.5% more instructions a turn. It also needs ``$`` in patterns
and its lenient draft-07 fallbacks vetted, and cannot build some schemas with
``detailed_exceptions=False``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from jsonschema import Draft202012Validator

from ._js import MAX_SAFE_INTEGER

__all__ = ["MISS", "FastCheck", "compile_fast_check"]

#: What a fast check returns when the full path must decide.
MISS: Final = object()

#: ``check(value)``: what the full path would return for ``value``, or :data:`MISS`.
FastCheck = Callable[[Any], Any]

_EVALUATED: Final = frozenset(Draft202012Validator.VALIDATORS)
_ANY_TYPE: Final = frozenset({"type", "enum", "const"})
_BOUNDS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_BY_TYPE: Final[dict[str, frozenset[str]]] = {
    "string": frozenset({"minLength", "maxLength", "pattern"}),
    "number": _BOUNDS,
    "integer": _BOUNDS,
    "boolean": frozenset(),
    "null": frozenset(),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset(
        {"properties", "required", "additionalProperties", "minProperties", "maxProperties"}
    ),
}


class _Unsupported(Exception):
    """The schema has a shape the fast path does not handle."""


def compile_fast_check(schema: Any) -> FastCheck | None:
    """The fast check for a (keyword-ordered, already checked) draft 2020-12 schema, or None.

    The result is valid for both pipelines (with and without TypeBox's convert): for the
    shapes accepted here both leave a valid value unchanged, integers included, because only
    ``int`` values within JavaScript's safe range are accepted for ``integer``.

    Args:
        schema: a schema that ``jsonschema``'s ``check_schema`` accepted.
    """
    try:
        return _compile(schema)
    except _Unsupported:
        return None


def _identity(value: Any) -> Any:
    return value


def _compile(schema: Any) -> FastCheck:
    if schema is True:
        return _identity
    if not isinstance(schema, dict):
        raise _Unsupported
    evaluated = _EVALUATED.intersection(schema)
    if "anyOf" in schema:
        if evaluated != {"anyOf"}:
            raise _Unsupported
        return _any_of_check(schema["anyOf"])
    declared = schema.get("type")
    if declared is None:
        if evaluated:
            raise _Unsupported
        return _identity  # only annotations: anything is valid and left alone
    if not isinstance(declared, str) or declared not in _BY_TYPE:
        raise _Unsupported
    if evaluated - _ANY_TYPE - _BY_TYPE[declared]:
        raise _Unsupported
    check = _BUILDERS[declared](schema)
    allowed = _allowed_strings(schema)
    if allowed is None:
        return check

    def restricted(value: Any) -> Any:
        if type(value) is not str or value not in allowed:
            return MISS
        return check(value)

    return restricted


def _allowed_strings(schema: dict[str, Any]) -> frozenset[str] | None:
    """``enum``/``const`` as a set of strings (other values: the full path decides)."""
    allowed: frozenset[str] | None = None
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or not all(type(v) is str for v in values):
            raise _Unsupported
        allowed = frozenset(values)
    if "const" in schema:
        const = schema["const"]
        if type(const) is not str:
            raise _Unsupported
        allowed = frozenset({const}) if allowed is None else allowed & {const}
    return allowed


def _any_of_check(branches: Any) -> FastCheck:
    """A value that passes one branch is valid, and both coercers keep it as it is (the very
    object: no copy). Branches the fast path cannot check are skipped: they can only miss."""
    if not isinstance(branches, list):
        raise _Unsupported
    checks = []
    for branch in branches:
        try:
            checks.append(_compile(branch))
        except _Unsupported:
            continue
    if not checks:
        raise _Unsupported
    if _identity in checks:
        return _identity
    alternatives = tuple(checks)

    def any_of(value: Any) -> Any:
        for check in alternatives:
            if check(value) is not MISS:
                return value
        return MISS

    return any_of


def _of_type(kind: type) -> FastCheck:
    def check(value: Any) -> Any:
        return value if type(value) is kind else MISS

    return check


def _string_check(schema: dict[str, Any]) -> FastCheck:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    source = schema.get("pattern")
    if not low and high is None and source is None:
        return _of_type(str)
    try:
        pattern = re.compile(source) if source is not None else None
    except (re.error, TypeError):
        raise _Unsupported from None

    def string(value: Any) -> Any:
        if type(value) is not str:
            return MISS
        size = len(value)
        if size < low or (high is not None and size > high):
            return MISS
        if pattern is not None and pattern.search(value) is None:
            return MISS
        return value

    return string


def _number_check(schema: dict[str, Any], *, integer: bool) -> FastCheck:
    minimum = schema.get("minimum")
    maximum = schema.get("maximum")
    above = schema.get("exclusiveMinimum")
    below = schema.get("exclusiveMaximum")
    bounded = any(limit is not None for limit in (minimum, maximum, above, below))

    def number(value: Any) -> Any:
        kind = type(value)
        if integer:
            # Floats (1.0) and unsafe integers are converted by TypeBox: the full path decides.
            if kind is not int or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
                return MISS
        elif kind is not int and kind is not float:
            return MISS
        if bounded and (
            (minimum is not None and value < minimum)
            or (maximum is not None and value > maximum)
            or (above is not None and value <= above)
            or (below is not None and value >= below)
        ):
            return MISS
        return value

    return number


def _array_check(schema: dict[str, Any]) -> FastCheck:
    items = schema.get("items", True)
    if not isinstance(items, dict) and items is not True:
        raise _Unsupported  # items: false, or the draft-07 list form
    item = None if items is True else _compile(items)
    low, high = schema.get("minItems", 0), schema.get("maxItems")

    def array(value: Any) -> Any:
        if type(value) is not list:
            return MISS
        size = len(value)
        if size < low or (high is not None and size > high):
            return MISS
        if item is None:
            return list(value)  # the coercers always return a new list
        out = []
        for entry in value:
            checked = item(entry)
            if checked is MISS:
                return MISS
            out.append(checked)
        return out

    return array


def _object_check(schema: dict[str, Any]) -> FastCheck:
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise _Unsupported
    checks = {name: _compile(sub) for name, sub in properties.items()}
    known = frozenset(checks)
    walk = tuple((name, check) for name, check in checks.items() if check is not _identity)
    required = frozenset(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, bool | dict):
        raise _Unsupported
    closed = extra is False
    extra_check = _compile(extra) if isinstance(extra, dict) else _identity
    check_extra = extra_check is not _identity
    low, high = schema.get("minProperties", 0), schema.get("maxProperties")

    def obj(value: Any) -> Any:
        if type(value) is not dict:
            return MISS
        keys = value.keys()
        if (required and not required <= keys) or (closed and not keys <= known):
            return MISS
        if low or high is not None:
            size = len(value)
            if size < low or (high is not None and size > high):
                return MISS
        out = dict(value)  # the coercers always return a new dict
        for name, check in walk:
            if name in out:
                checked = check(out[name])
                if checked is MISS:
                    return MISS
                out[name] = checked
        if check_extra:
            for name, entry in value.items():
                if name not in known:
                    checked = extra_check(entry)
                    if checked is MISS:
                        return MISS
                    out[name] = checked
        return out

    return obj


_BUILDERS: Final[dict[str, Callable[[dict[str, Any]], FastCheck]]] = {
    "object": _object_check,
    "array": _array_check,
    "string": _string_check,
    "number": lambda schema: _number_check(schema, integer=False),
    "integer": lambda schema: _number_check(schema, integer=True),
    "boolean": lambda schema: _of_type(bool),
    "null": lambda schema: _null,
}


def _null(value: Any) -> Any:
    return value if value is None else MISS
