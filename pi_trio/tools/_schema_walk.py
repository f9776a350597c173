"""Walking a JSON schema, and a value along it: the structure every validation step shares.

Three things, each needed by more than one step of the validator:

- :func:`ordered_schema`: a copy of a schema whose keywords follow the order TypeBox evaluates
  them in. ``jsonschema`` reports errors in the schema's key order, so validating against this
  copy gives pi's (TypeBox's) error order with no sorting per call.
- :class:`BranchChecks`: one compiled ``jsonschema`` validator per ``anyOf``/``oneOf`` branch,
  built once: both coercers ask "does the value already match this branch?" on every call.
- :func:`map_properties` and :func:`map_items`: the one walker over an object's properties and
  an array's items that both coercers use (each passes its own step function). They copy the
  container, never mutate it: pi coerces a structured clone, and the caller's arguments stay as
  they were received (the error text shows them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from jsonschema.protocols import Validator

__all__ = ["BranchChecks", "Step", "map_items", "map_properties", "ordered_schema", "subschemas"]

#: A coercion step: ``step(value, subschema) -> value``.
Step = Callable[[Any, Any], Any]

_TYPEBOX_KEYWORD_ORDER: Final = (
    "type",
    "required",
    "additionalProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "properties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "additionalItems",
    "contains",
    "items",
    "maxContains",
    "maxItems",
    "minContains",
    "minItems",
    "prefixItems",
    "uniqueItems",
    "format",
    "maxLength",
    "minLength",
    "pattern",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "maximum",
    "minimum",
    "multipleOf",
    "$ref",
    "const",
    "enum",
    "if",
    "not",
    "allOf",
    "anyOf",
    "oneOf",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_KEYWORD_RANK: Final = {k: i for i, k in enumerate(_TYPEBOX_KEYWORD_ORDER)}
_SCHEMA_MAP_KEYWORDS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SCHEMA_LIST_KEYWORDS: Final = frozenset({"prefixItems", "allOf", "anyOf", "oneOf", "items"})
_SCHEMA_KEYWORDS: Final = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)


def ordered_schema(schema: Any) -> Any:
    """Deep copy of a schema whose keywords follow TypeBox's evaluation order.

    Keywords TypeBox does not evaluate (annotations, unknown keys) come first, in their order;
    subschemas are reordered too. Anything that is not a dict is returned as it is.
    """
    if not isinstance(schema, dict):
        return schema
    keys = sorted(schema, key=lambda k: (k in _KEYWORD_RANK, _KEYWORD_RANK.get(k, -1)))
    return {key: _map_subschemas(key, schema[key], ordered_schema) for key in keys}


def _map_subschemas(key: str, value: Any, fn: Callable[[Any], Any]) -> Any:
    """``value`` (the value of keyword ``key``) with ``fn`` applied to each subschema in it."""
    if key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
        return {name: fn(sub) for name, sub in value.items()}
    if key in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
        return [fn(sub) for sub in value]
    if key in _SCHEMA_KEYWORDS:
        return fn(value)
    return value


def subschemas(schema: Any) -> Iterable[tuple[str, Any]]:
    """Every ``(keyword, subschema)`` directly below a schema (none below a non-dict)."""
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        if key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            for sub in value.values():
                yield key, sub
        elif key in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
            for sub in value:
                yield key, sub
        elif key in _SCHEMA_KEYWORDS:
            yield key, value


class BranchChecks:
    """Compiled validators for every union branch of one schema, built once, looked up by id.

    A branch is identified by the very dict object in the (ordered) schema, which this object
    keeps alive so that ids stay unique.
    """

    def __init__(self, root: Validator, schema: Any) -> None:
        """Compile every ``anyOf``/``oneOf`` branch below ``schema`` with ``root``'s settings.

        Args:
            root: the validator of the whole schema (its class and format checker are reused).
            schema: the schema to search for branches, usually ``root``'s own schema.
        """
        self._by_id: dict[int, Validator] = {}
        self._keep: list[Any] = []
        pending: list[Any] = [schema]
        while pending:
            current = pending.pop()
            for key, sub in subschemas(current):
                if key in ("anyOf", "oneOf") and isinstance(sub, dict | bool):
                    self._by_id[id(sub)] = root.evolve(schema=sub)
                    self._keep.append(sub)
                pending.append(sub)

    def check(self, branch: Any, value: Any) -> bool:
        """Whether ``value`` is valid against ``branch`` (False for a schema that is no branch)."""
        validator = self._by_id.get(id(branch))
        return validator is not None and validator.is_valid(value)


def map_properties(value: dict[str, Any], schema: Any, step: Step) -> dict[str, Any]:
    """A copy of ``value`` with ``step`` applied to each member the object schema describes.

    A member named in ``properties`` goes through its property schema; when
    ``additionalProperties`` is a schema (``dict[str, T]``), every other member goes through it.
    Members with no schema are copied unchanged.
    """
    out = dict(value)
    properties = schema.get("properties")
    defined = properties if isinstance(properties, dict) else {}
    for key, sub in defined.items():
        if key in out:
            out[key] = step(out[key], sub)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key in out:
            if key not in defined:
                out[key] = step(out[key], extra)
    return out


def map_items(value: list[Any], schema: Any, step: Step, *, typebox: bool) -> list[Any]:
    """A copy of ``value`` with ``step`` applied to each item the array schema describes.

    A tuple's ``prefixItems`` (draft 2020-12) apply item by item. TypeBox's convert stops there;
    pi (``typebox=False``) also applies the draft-07 tuple form (``items`` as a list) and an
    ``items`` schema to the items after the prefix. Without a prefix, an ``items`` schema applies
    to every item in both.
    """
    out = list(value)
    start = 0
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        for index, sub in enumerate(prefix[: len(out)]):
            out[index] = step(out[index], sub)
        if typebox:
            return out
        start = len(prefix)
    items = schema.get("items")
    if isinstance(items, list) and not typebox:
        for index, sub in enumerate(items[: len(out)]):
            out[index] = step(out[index], sub)
    elif isinstance(items, dict):
        for index in range(start, len(out)):
            out[index] = step(out[index], items)
    return out
