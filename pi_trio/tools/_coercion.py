"""pi-ai's own JSON-schema coercion (``coerceWithJsonSchema``), run on every tool call.

Before validating, pi (0.73.1) nudges arguments towards the types the schema declares: ``"12"``
where a number is expected becomes 12, ``1`` where a boolean is expected ``true``, ``null``
where a string is expected ``""``, ... It is driven by ``type``, ``allOf``, ``anyOf`` and
``oneOf``, and recurses into properties and items. Doing the same here means a model gets the
same arguments accepted and the same ones rejected as with pi.

One deliberate extension over pi: a JSON string where an array or object is expected (a common
model mistake) is parsed, when it parses into the expected kind (:func:`parse_json_container`,
switched by ``coerce_json_strings``). TypeBox's own convert pass, which pi runs first for
TypeBox-built schemas, is in ``_typebox_convert``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ._js import JS_WHITESPACE, is_number, js_number_to_string, js_strict_equal, js_string_to_number
from ._schema_walk import BranchChecks, map_items, map_properties

__all__ = ["JsonSchemaCoercer", "parse_json_container"]


class JsonSchemaCoercer:
    """pi-ai's ``coerceWithJsonSchema``: type-driven coercion applied to every schema.

    Pure: returns new containers, never mutates its input (pi mutates a structured clone).
    """

    def __init__(self, checks: BranchChecks, parse_json_strings: bool) -> None:
        """Args:
        checks: the compiled union branches of the schema this coercer will be given.
        parse_json_strings: whether to parse a JSON string where an array or object is expected.
        """
        self._checks = checks
        self._parse_json_strings = parse_json_strings

    def coerce(self, value: Any, schema: Any) -> Any:
        """``value`` coerced towards ``schema`` (unchanged where no rule applies)."""
        if not isinstance(schema, dict):
            return value
        result = value
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for sub in all_of:
                result = self.coerce(result, sub)
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list):
                result = self._union(result, branches)
        types_ = _schema_types(schema)
        if self._parse_json_strings:
            result = parse_json_container(result, types_)
        matches_member = len(types_) > 1 and any(_matches_json_type(result, t) for t in types_)
        if types_ and not matches_member:
            for json_type in types_:
                candidate = _coerce_primitive(result, json_type)
                if not js_strict_equal(candidate, result):
                    result = candidate
                    break
        if "object" in types_ and isinstance(result, dict):
            result = map_properties(result, schema, self.coerce)
        if "array" in types_ and isinstance(result, list):
            result = map_items(result, schema, self.coerce, typebox=False)
        return result

    def _union(self, value: Any, branches: list[Any]) -> Any:
        # pi (0.73.1) tries each branch's coercion before looking at the value, so `null` for
        # `anyOf: [number, null]` becomes 0 and "12" for `anyOf: [number, string]` becomes 12.
        # A value that already matches a branch is kept here (as TypeBox's own Convert does).
        if any(self._checks.check(branch, value) for branch in branches):
            return value
        for branch in branches:
            candidate = self.coerce(value, branch)
            if self._checks.check(branch, candidate):
                return candidate
        return value


def _schema_types(schema: Mapping[str, Any]) -> list[str]:
    """The schema's ``type`` as a list (empty when it declares none)."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []


def _matches_json_type(value: Any, json_type: str) -> bool:
    if json_type == "number":
        return is_number(value)
    if json_type == "integer":
        return is_number(value) and (isinstance(value, int) or value.is_integer())
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "null":
        return value is None
    if json_type == "array":
        return isinstance(value, list)
    if json_type == "object":
        return isinstance(value, dict)
    return False


def _coerce_primitive(value: Any, json_type: str) -> Any:
    """pi-ai's ``coercePrimitiveByType``: one conversion towards one JSON type, or the value."""
    if json_type in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, str) and value.strip(JS_WHITESPACE):
            parsed = js_string_to_number(value)
            if (
                parsed is not None
                and math.isfinite(parsed)
                and (json_type == "number" or float(parsed).is_integer())
            ):
                return parsed
        if isinstance(value, bool):
            return 1 if value else 0
        return value
    if json_type == "boolean":
        if value is None:
            return False
        if value == "true" and isinstance(value, str):
            return True
        if value == "false" and isinstance(value, str):
            return False
        if is_number(value) and value in (0, 1):
            return value == 1
        return value
    if json_type == "string":
        if value is None:
            return ""
        if isinstance(value, bool | int | float):
            return js_number_to_string(value)
        return value
    if json_type == "null":
        if value == "" or (is_number(value) and value == 0) or value is False:
            return None
        return value
    return value


def parse_json_container(value: Any, types_: Iterable[str]) -> Any:
    """The JSON-string extension: ``"[1, 2]"`` where an array is expected becomes ``[1, 2]``.

    ``value`` is returned unchanged unless it is a string holding a JSON array (object) and
    ``types_`` includes ``"array"`` (``"object"``). ``NaN`` and ``Infinity`` are not JSON here.
    """
    wanted = set(types_)
    if not isinstance(value, str) or not wanted & {"array", "object"}:
        return value
    text = value.strip()
    if not text or text[0] not in "[{":
        return value
    try:
        parsed = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return value
    if (isinstance(parsed, list) and "array" in wanted) or (
        isinstance(parsed, dict) and "object" in wanted
    ):
        return parsed
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")
