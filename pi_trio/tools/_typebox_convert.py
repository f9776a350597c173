"""TypeBox's ``Value.Convert``, the first coercion pi runs for TypeBox-built schemas.

pi-ai (0.73.1) calls ``Value.Convert`` before its own coercion when a tool's parameters are a
TypeBox schema. pi_trio's equivalent of a TypeBox schema is an attrs class (its schema comes
from ``json_schema_for``), so this pass runs for attrs-class tools only, over the schema shapes
``json_schema_for`` generates. Its rules differ from pi's own coercion (``_coercion``): it
truncates ``1.5`` to ``1`` for an integer, reads ``"TRUE"`` and ``"1"`` as ``true``, ``"null"``
and ``"undefined"`` as ``null``, wraps a scalar into a one-item array, and converts towards a
literal only when the result equals it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Final

from ._coercion import parse_json_container
from ._js import (
    MAX_SAFE_INTEGER,
    is_number,
    js_number_to_string,
    js_strict_equal,
    js_string_to_number,
    json_kind,
    prefer_int,
)
from ._schema_walk import BranchChecks, map_items, map_properties

__all__ = ["TypeBoxConverter"]

#: What a ``_try_*`` conversion returns when the value does not convert.
_FAIL: Final = object()


class TypeBoxConverter:
    """TypeBox's ``Value.Convert`` over the schema shapes ``json_schema_for`` generates. Pure."""

    def __init__(self, checks: BranchChecks, parse_json_strings: bool) -> None:
        """Args:
        checks: the compiled union branches of the schema this converter will be given.
        parse_json_strings: whether to parse a JSON string where an array or object is expected.
        """
        self._checks = checks
        self._parse_json_strings = parse_json_strings

    def convert(self, value: Any, schema: Any) -> Any:
        """``value`` converted towards ``schema`` (unchanged where no rule applies)."""
        if not isinstance(schema, dict):
            return value
        if isinstance(schema.get("anyOf"), list):
            return self._union(value, schema["anyOf"])
        if "enum" in schema:  # pi's StringEnum is a TypeBox ``Unsafe``: Convert leaves it alone
            return value
        if "const" in schema:
            return _convert_literal(value, schema["const"])
        json_type = schema.get("type")
        if json_type == "object":
            return self._object(value, schema)
        if json_type == "array":
            return self._array(value, schema)
        if json_type == "integer":
            number = _try_number(value)
            if number is _FAIL:
                return value
            if isinstance(number, float) and math.isfinite(number):
                return prefer_int(math.trunc(number))
            return number  # an int (of any size) is already integral; inf and NaN stay
        try_fn = _TRY_BY_TYPE.get(json_type) if isinstance(json_type, str) else None
        if try_fn is not None:
            result = try_fn(value)
            return value if result is _FAIL else result
        return value

    def _union(self, value: Any, branches: list[Any]) -> Any:
        if any(self._checks.check(b, value) for b in branches):
            return value
        for branch in branches:
            candidate = self.convert(value, branch)
            if any(self._checks.check(b, candidate) for b in branches):
                return candidate
        return value

    def _object(self, value: Any, schema: dict[str, Any]) -> Any:
        if self._parse_json_strings:
            value = parse_json_container(value, ("object",))
        if not isinstance(value, dict):
            return value
        # dict[str, T] converts every value too, as TypeBox's Record does.
        return map_properties(value, schema, self.convert)

    def _array(self, value: Any, schema: dict[str, Any]) -> Any:
        if self._parse_json_strings:
            value = parse_json_container(value, ("array",))
        if not isinstance(value, list):
            if isinstance(schema.get("prefixItems"), list):
                return value  # a tuple is converted item by item, never wrapped
            value = [value]
        return map_items(value, schema, self.convert, typebox=True)


def _convert_literal(value: Any, literal: Any) -> Any:
    if js_strict_equal(value, literal):
        return value
    try_fn = _TRY_BY_TYPE.get(json_kind(literal))
    if try_fn is None:
        return value
    result = try_fn(value)
    return result if result is not _FAIL and js_strict_equal(result, literal) else value


_BIGINT_LITERAL: Final = re.compile(r"-?(?:0|[1-9]\d*)n")


def _try_number(value: Any) -> Any:
    if isinstance(value, bool):
        return 1 if value else 0
    if is_number(value):
        return value
    if value is None:
        return 0
    if isinstance(value, str):
        parsed = js_string_to_number(value)
        if parsed is not None and math.isfinite(parsed):
            return parsed
        lower = value.lower()
        if lower in ("false", "true"):
            return 1 if lower == "true" else 0
        if _BIGINT_LITERAL.fullmatch(value):
            big = int(value[:-1])
            return big if abs(big) <= MAX_SAFE_INTEGER else _FAIL
    return _FAIL


def _try_string(value: Any) -> Any:
    if isinstance(value, bool | int | float):
        return js_number_to_string(value)
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return _FAIL


def _try_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if is_number(value):
        return value == 1 if value in (0, 1) else _FAIL
    if value is None:
        return False
    if isinstance(value, str):
        lower = value.lower()
        if lower in ("false", "0"):
            return False
        if lower in ("true", "1"):
            return True
    return _FAIL


def _try_null(value: Any) -> Any:
    if value is None or value is False or (is_number(value) and value == 0):
        return None
    if isinstance(value, str) and value.lower() in ("undefined", "null", "", "0"):
        return None
    return _FAIL


_TRY_BY_TYPE: Final[dict[str, Callable[[Any], Any]]] = {
    "number": _try_number,
    "string": _try_string,
    "boolean": _try_boolean,
    "null": _try_null,
}
