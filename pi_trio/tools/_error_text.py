"""pi's validation error text: TypeBox's English messages, in TypeBox's order, pi's paths.

When arguments are invalid, pi (0.73.1) answers the model with a tool result like::

    Validation failed for tool "read":
      - path: must have required properties path
      - limit: must be >= 1

    Received arguments:
    { ... JSON.stringify(args, null, 2) ... }

The model reads this text to recover, so it is reproduced byte for byte: the messages are
TypeBox's en_US ones (``must be string``, ``must have required properties a, b``), the paths
are JSON-pointer segments joined by dots (``root`` for the arguments themselves), and numbers
print as JavaScript prints them. The problems come from ``jsonschema`` errors (already in
TypeBox's order: see ``_schema_walk.ordered_schema``) or, rarely, from a cattrs failure when
structuring.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import cattrs
from jsonschema.exceptions import ValidationError

from ._js import is_number, js_json_stringify, js_number_to_string

__all__ = ["format_validation_error", "problems_from_errors", "problems_from_structuring"]


def format_validation_error(tool_name: str, problems: list[str], arguments: Any) -> str:
    """pi's text: ``Validation failed for tool "x":`` + problems + received arguments.

    Args:
        tool_name: the tool's name, as the model called it.
        problems: ``path: message`` lines (none gives pi's "Unknown validation error").
        arguments: the arguments as received, before any coercion.
    """
    body = "\n".join(f"  - {p}" for p in problems) or "Unknown validation error"
    return (
        f'Validation failed for tool "{tool_name}":\n{body}\n\n'
        f"Received arguments:\n{js_json_stringify(arguments)}"
    )


def problems_from_errors(errors: Iterable[ValidationError]) -> list[str]:
    """Turn ``jsonschema`` errors into pi's ``path: message`` problems, in TypeBox's order.

    A failed ``anyOf``/``oneOf`` lists its branches' problems first, then its own line, as
    TypeBox does; missing required properties are reported together, once per object.
    """
    lines: list[str] = []
    seen: set[tuple[Any, ...]] = set()
    for error in errors:
        keyword = error.validator
        path = list(error.absolute_path)
        if keyword in ("anyOf", "oneOf"):
            lines.extend(problems_from_errors(error.context or ()))
            message = (
                "must match a schema in anyOf"
                if keyword == "anyOf"
                else "must match exactly one schema in oneOf"
            )
            lines.append(f"{_path_text(path)}: {message}")
            continue
        if keyword in ("required", "dependentRequired"):
            # jsonschema reports each missing property; TypeBox reports them together.
            group = (keyword, tuple(path), tuple(error.absolute_schema_path))
            if group in seen:
                continue
            seen.add(group)
            lines.extend(_grouped_problems(error, path))
            continue
        lines.append(f"{_path_text(path)}: {_message(error)}")
    return lines


def problems_from_structuring(exc: Exception) -> list[str]:
    """Problems from a cattrs failure (rare: the schema check passed), in pi's path format."""
    if not isinstance(exc, cattrs.BaseValidationError):
        return [f"root: {exc}"]
    problems = []
    for text in cattrs.transform_error(exc):
        message, _, where = text.rpartition(" @ ")
        path = where.removeprefix("$").lstrip(".").replace("[", ".").replace("]", "")
        path = path.replace("'", "").replace('"', "")
        problems.append(f"{path or 'root'}: {message or text}")
    return problems


def _path_text(path: Iterable[Any], leaf: str | None = None) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    if leaf is not None:
        parts.append(leaf)
    return ".".join(parts) or "root"


def _grouped_problems(error: ValidationError, path: list[Any]) -> list[str]:
    instance = error.instance if isinstance(error.instance, dict) else {}
    spec: Any = error.validator_value
    if error.validator == "required":
        missing = [str(k) for k in spec if k not in instance]
        if not missing:
            return []
        return [
            f"{_path_text(path, missing[0])}: must have required properties {', '.join(missing)}"
        ]
    lines = []
    for prop, needs in spec.items():
        if prop in instance:
            missing = [str(k) for k in needs if k not in instance]
            if missing:
                lines.append(
                    f"{_path_text(path)}: must have properties {', '.join(missing)} "
                    f"when property {prop} is present"
                )
    return lines


def _limit(value: Any) -> str:
    return js_number_to_string(value) if is_number(value) else str(value)


_SIMPLE_MESSAGES: Final = {
    "additionalProperties": "must not have additional properties",
    "const": "must be equal to constant",
    "contains": "must contain at least 1 valid item",
    "enum": "must be equal to one of the allowed values",
    "not": "must not be valid",
    "uniqueItems": "must not have duplicate items",
    "unevaluatedItems": "must not have unevaluated items",
    "unevaluatedProperties": "must not have unevaluated properties",
    None: "schema is false",
}
_COMPARISONS: Final = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
}
_COUNTS: Final = {
    "maxItems": ("more", "items"),
    "minItems": ("fewer", "items"),
    "maxLength": ("more", "characters"),
    "minLength": ("fewer", "characters"),
    "maxProperties": ("more", "properties"),
    "minProperties": ("fewer", "properties"),
}


def _message(error: ValidationError) -> str:
    """TypeBox's message for one failed keyword (``jsonschema``'s own for the rare rest)."""
    keyword = error.validator
    value = error.validator_value
    if keyword == "type":
        if isinstance(value, list):
            return f"must be either {' or '.join(map(str, value))}"
        return f"must be {value}"
    if keyword in _SIMPLE_MESSAGES:
        return _SIMPLE_MESSAGES[keyword]
    if keyword in _COMPARISONS:
        return f"must be {_COMPARISONS[keyword]} {_limit(value)}"
    if keyword in _COUNTS:
        more_or_fewer, unit = _COUNTS[keyword]
        return f"must not have {more_or_fewer} than {_limit(value)} {unit}"
    if keyword == "multipleOf":
        return f"must be multiple of {_limit(value)}"
    if keyword == "pattern":
        return f'must match pattern "{value}"'
    if keyword == "format":
        return f'must match format "{value}"'
    return str(error.message)
