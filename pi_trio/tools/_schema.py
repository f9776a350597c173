"""JSON schemas from attrs classes and type annotations, shaped like pi's TypeBox schemas.

``json_schema_for(cls)`` is what an attrs-class tool shows the model; the validator then checks
arguments against it (after TypeBox's ``Value.Convert``, see ``_typebox_convert``).
"""

from __future__ import annotations

import collections.abc
import enum
import inspect
import math
import types
from typing import Annotated, Any, Final, Literal, Union, get_args, get_origin

import attrs

from ._js import json_kind

__all__ = ["JsonSchema", "json_schema_for"]

JsonSchema = dict[str, Any]


_SEQUENCE_ORIGINS: Final[frozenset[Any]] = frozenset(
    {
        list,
        collections.abc.Sequence,
        collections.abc.MutableSequence,
        collections.abc.Iterable,
        collections.abc.Collection,
    }
)
_SET_ORIGINS: Final[frozenset[Any]] = frozenset(
    {set, frozenset, collections.abc.Set, collections.abc.MutableSet}
)
_MAPPING_ORIGINS: Final[frozenset[Any]] = frozenset(
    {dict, collections.abc.Mapping, collections.abc.MutableMapping}
)


def _doc_summary(obj: Any) -> str:
    """First paragraph of an object's docstring, its lines joined by spaces ('' if none)."""
    doc = inspect.getdoc(obj) if not isinstance(obj, str) else inspect.cleandoc(obj)
    if not doc:
        return ""
    lines: list[str] = []
    for line in doc.splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return " ".join(lines)


def json_schema_for(params_type: type) -> JsonSchema:
    """JSON schema (draft 2020-12) for an attrs class, shaped like pi's TypeBox ``Type.Object``.

    Fields with a default are optional; ``attrs.field(metadata={"description": ...})`` or
    ``Annotated[T, "description"]`` give descriptions. Like TypeBox, objects leave
    ``additionalProperties`` unset (extra arguments are allowed and ignored when structuring).

    Args:
        params_type: an attrs class; its fields may be scalars, enums, ``Literal``, unions,
            lists, sets, tuples, ``dict[str, T]`` and other attrs classes.

    Raises:
        TypeError: ``params_type`` is not an attrs class, is recursive, or has a field type
            that JSON cannot express (the text names it).
    """
    if not (isinstance(params_type, type) and attrs.has(params_type)):
        raise TypeError(f"json_schema_for() needs an attrs class, got {params_type!r}")
    return _object_schema(params_type, ())


def _object_schema(cls: type, stack: tuple[type, ...]) -> JsonSchema:
    if cls in stack:
        raise TypeError(f"recursive attrs class {cls.__qualname__} cannot be a tool parameter")
    attrs.resolve_types(cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        properties[field.name] = _field_schema(
            field.type if field.type is not None else Any,
            field.default,
            field.metadata.get("description"),
            (*stack, cls),
        )
        if field.default is attrs.NOTHING:
            required.append(field.name)
    schema: JsonSchema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _field_schema(tp: Any, default: Any, description: Any, stack: tuple[type, ...]) -> JsonSchema:
    """Schema of one object property: its type's schema plus description and default."""
    schema = _schema_for_type(tp, stack)
    if isinstance(description, str) and description:
        schema["description"] = description
    if default is not attrs.NOTHING and not isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        ok, value = _json_default(default)
        if ok:
            schema["default"] = value
    return schema


def _json_default(value: Any) -> tuple[bool, Any]:
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, bool | str):
        return True, value
    if isinstance(value, int | float):
        return isinstance(value, int) or math.isfinite(value), value
    if isinstance(value, list | tuple):
        converted = [_json_default(item) for item in value]
        return all(ok for ok, _ in converted), [item for _, item in converted]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        pairs = {k: _json_default(v) for k, v in value.items()}
        return all(ok for ok, _ in pairs.values()), {k: v for k, (_, v) in pairs.items()}
    return False, None


def _schema_for_type(tp: Any, stack: tuple[type, ...] = ()) -> JsonSchema:
    """Schema for one type annotation (the building block of ``json_schema_for``)."""
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Annotated:
        schema = _schema_for_type(args[0], stack)
        notes = [m for m in args[1:] if isinstance(m, str)]
        if notes:
            schema["description"] = notes[0]
        return schema
    if tp is Any or tp is object:
        return {}
    if tp is None or tp is types.NoneType:
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _literal_schema([member.value for member in tp])
    if isinstance(tp, type) and attrs.has(tp):
        schema = _object_schema(tp, stack)
        summary = _doc_summary(tp) if tp.__doc__ else ""
        if summary:
            schema["description"] = summary
        return schema
    if origin is Literal:
        return _literal_schema([a.value if isinstance(a, enum.Enum) else a for a in args])
    if origin is Union or origin is types.UnionType:
        return {"anyOf": [_schema_for_type(member, stack) for member in args]}
    if tp in _SEQUENCE_ORIGINS or origin in _SEQUENCE_ORIGINS:
        return _array_schema(args, stack)
    if tp in _SET_ORIGINS or origin in _SET_ORIGINS:
        return {**_array_schema(args, stack), "uniqueItems": True}
    if tp is tuple or origin is tuple:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return _array_schema(args[:1], stack)
        if args == ((),):
            return {"type": "array", "maxItems": 0}
        return {
            "type": "array",
            "prefixItems": [_schema_for_type(a, stack) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if tp in _MAPPING_ORIGINS or origin in _MAPPING_ORIGINS:
        if args and args[0] is not str:
            raise TypeError(f"only str keys are supported in tool parameters, got {tp!r}")
        if len(args) == 2:
            return {"type": "object", "additionalProperties": _schema_for_type(args[1], stack)}
        return {"type": "object"}
    raise TypeError(f"unsupported tool parameter type: {tp!r}")


def _array_schema(args: tuple[Any, ...], stack: tuple[type, ...]) -> JsonSchema:
    if args:
        return {"type": "array", "items": _schema_for_type(args[0], stack)}
    return {"type": "array"}


def _literal_schema(values: list[Any]) -> JsonSchema:
    kinds = {json_kind(v) for v in values}
    if kinds == {"null"}:
        return {"type": "null"}
    json_type: str | None = None
    if kinds == {"string"}:
        json_type = "string"
    elif kinds == {"boolean"}:
        json_type = "boolean"
    elif kinds == {"number"}:
        json_type = "integer" if all(isinstance(v, int) for v in values) else "number"
    schema: JsonSchema = {} if json_type is None else {"type": json_type}
    if len(values) == 1:
        schema["const"] = values[0]
    else:
        schema["enum"] = list(values)
    return schema
