"""Tool argument validation: pi's coercions and pi's error text (schemas: ``_schema``).

pi-ai (0.73.1) validates a tool call's arguments in three steps, and this module does the same so
that a model sees the same error text and recovers the same way:

1. TypeBox ``Value.Convert`` (only for schemas built with TypeBox): a string where a number is
   expected becomes a number, a number where a string is expected a string, a scalar where an
   array is expected a one-item array, ... Here it runs for attrs classes, whose generated schema
   plays the role of a TypeBox schema.
2. pi's own JSON-schema coercion (for every schema): the same idea, driven by ``type``, ``anyOf``,
   ``oneOf`` and ``allOf``, with slightly different rules (see ``_JsonSchemaCoercer``).
3. Validation, with errors rendered in TypeBox's English (``must be string``, ``must have
   required properties a, b``) in TypeBox's order, one ``  - path: message`` line each, then the
   received arguments as ``JSON.stringify(args, null, 2)`` would print them.

Validation proper is done by the ``jsonschema`` library; TypeBox's order is obtained by ordering
each schema's keywords the way TypeBox evaluates them, once, when the validator is built.

One deliberate extension over pi: a JSON string where an array or object is expected (a common
model mistake) is parsed, when it parses into the expected kind (``coerce_json_strings``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Union

import cattrs
from cattrs.strategies import configure_union_passthrough
from jsonschema import validators as _js_validators
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator

from .._errors import ToolArgumentError
from ._fast_check import MISS, compile_fast_check
from ._js import MAX_SAFE_INTEGER as _MAX_SAFE_INTEGER
from ._js import is_number as _is_number
from ._js import js_json_stringify, js_number_to_string
from ._js import json_kind as _json_kind
from ._schema import JsonSchema, json_schema_for

__all__ = [
    "ArgumentValidator",
    "ToolArgumentError",
    "format_validation_error",
    "js_json_stringify",
    "js_number_to_string",
    "json_schema_for",
]


# ---------------------------------------------------------------------------------------------
# JSON value helpers
# ---------------------------------------------------------------------------------------------


def _strict_equal(a: Any, b: Any) -> bool:
    """JavaScript ``===``: primitives by kind and value, arrays and objects by identity."""
    kind = _json_kind(a)
    if kind != _json_kind(b):
        return False
    if kind in ("array", "object", "other"):
        return a is b
    return bool(a == b)


def _matches_json_type(value: Any, json_type: str) -> bool:
    if json_type == "number":
        return _is_number(value)
    if json_type == "integer":
        return _is_number(value) and float(value).is_integer()
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


def _schema_types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []


def _number(value: float) -> int | float:
    """Prefer ``int`` for integral results (JSON has one number type; cattrs likes ints)."""
    if math.isfinite(value) and float(value).is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return int(value)
    return value


# JavaScript's StrWhiteSpaceChar set (what Number() and String.prototype.trim() strip).
_JS_WHITESPACE: Final = " \t\n\v\f\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
)
_JS_DECIMAL: Final = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_JS_RADIX: Final = re.compile(
    r"0(?:[xX](?P<hex>[0-9a-fA-F]+)|[oO](?P<oct>[0-7]+)|[bB](?P<bin>[01]+))"
)


def _js_string_to_number(text: str) -> int | float | None:
    """JavaScript ``Number(text)``; ``None`` stands for NaN."""
    stripped = text.strip(_JS_WHITESPACE)
    if not stripped:
        return 0
    radix = _JS_RADIX.fullmatch(stripped)
    if radix:
        if radix["hex"]:
            return _number(float(int(radix["hex"], 16)))
        if radix["oct"]:
            return _number(float(int(radix["oct"], 8)))
        return _number(float(int(radix["bin"], 2)))
    if _JS_DECIMAL.fullmatch(stripped):
        if stripped.endswith("Infinity"):
            return -math.inf if stripped.startswith("-") else math.inf
        return _number(float(stripped))
    return None


def _parse_json_container(value: Any, types_: Iterable[str]) -> Any:
    """The JSON-string extension: ``"[1, 2]"`` where an array is expected becomes ``[1, 2]``."""
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


# ---------------------------------------------------------------------------------------------
# Keyword order (TypeBox reports errors in this order; jsonschema in the schema's key order)
# ---------------------------------------------------------------------------------------------

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
_SCHEMA_LIST_KEYWORDS: Final = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
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


def _ordered_schema(schema: Any) -> Any:
    """Deep copy of a schema whose keywords follow TypeBox's evaluation order."""
    if not isinstance(schema, dict):
        return schema
    keys = sorted(schema, key=lambda k: (k in _KEYWORD_RANK, _KEYWORD_RANK.get(k, -1)))
    out: JsonSchema = {}
    for key in keys:
        value = schema[key]
        if key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            value = {name: _ordered_schema(sub) for name, sub in value.items()}
        elif (key in _SCHEMA_LIST_KEYWORDS or key == "items") and isinstance(value, list):
            value = [_ordered_schema(sub) for sub in value]
        elif key in _SCHEMA_KEYWORDS:
            value = _ordered_schema(value)
        out[key] = value
    return out


def _subschemas(schema: Any) -> Iterable[tuple[str, Any]]:
    """Every (keyword, subschema) directly below a schema."""
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        if key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            for sub in value.values():
                yield key, sub
        elif (key in _SCHEMA_LIST_KEYWORDS or key == "items") and isinstance(value, list):
            for sub in value:
                yield key, sub
        elif key in _SCHEMA_KEYWORDS:
            yield key, value


# ---------------------------------------------------------------------------------------------
# Coercion
# ---------------------------------------------------------------------------------------------

_FAIL: Final = object()


class _Checks:
    """Compiled validators for every union branch of one schema, built once, looked up by id."""

    def __init__(self, root: Validator, schema: JsonSchema) -> None:
        self._by_id: dict[int, Validator] = {}
        self._keep: list[Any] = []  # keeps the branch dicts alive, so their ids stay unique
        pending: list[Any] = [schema]
        while pending:
            current = pending.pop()
            for key, sub in _subschemas(current):
                if key in ("anyOf", "oneOf") and isinstance(sub, dict | bool):
                    self._by_id[id(sub)] = root.evolve(schema=sub)
                    self._keep.append(sub)
                pending.append(sub)

    def check(self, schema: Any, value: Any) -> bool:
        validator = self._by_id.get(id(schema))
        return validator is not None and validator.is_valid(value)


class _JsonSchemaCoercer:
    """pi-ai's ``coerceWithJsonSchema``: type-driven coercion applied to every schema.

    Pure: returns new containers, never mutates its input (pi mutates a structured clone).
    """

    def __init__(self, checks: _Checks, parse_json_strings: bool) -> None:
        self._checks = checks
        self._parse_json_strings = parse_json_strings

    def coerce(self, value: Any, schema: Any) -> Any:
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
            result = _parse_json_container(result, types_)
        matches_member = len(types_) > 1 and any(_matches_json_type(result, t) for t in types_)
        if types_ and not matches_member:
            for json_type in types_:
                candidate = _coerce_primitive(result, json_type)
                if not _strict_equal(candidate, result):
                    result = candidate
                    break
        if "object" in types_ and isinstance(result, dict):
            result = self._object(result, schema)
        if "array" in types_ and isinstance(result, list):
            result = self._array(result, schema)
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

    def _object(self, value: dict[str, Any], schema: JsonSchema) -> dict[str, Any]:
        out = dict(value)
        properties = schema.get("properties")
        defined = properties if isinstance(properties, dict) else {}
        for key, sub in defined.items():
            if key in out:
                out[key] = self.coerce(out[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in out:
                if key not in defined:
                    out[key] = self.coerce(out[key], extra)
        return out

    def _array(self, value: list[Any], schema: JsonSchema) -> list[Any]:
        out = list(value)
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        start = 0
        if isinstance(prefix, list):  # draft 2020-12 tuples (pi knows only the draft-07 form)
            for index, sub in enumerate(prefix[: len(out)]):
                out[index] = self.coerce(out[index], sub)
            start = len(prefix)
        if isinstance(items, list):
            for index, sub in enumerate(items[: len(out)]):
                out[index] = self.coerce(out[index], sub)
        elif isinstance(items, dict):
            for index in range(start, len(out)):
                out[index] = self.coerce(out[index], items)
        return out


def _coerce_primitive(value: Any, json_type: str) -> Any:
    """pi-ai's ``coercePrimitiveByType``: one conversion towards one JSON type, or the value."""
    if json_type in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, str) and value.strip(_JS_WHITESPACE):
            parsed = _js_string_to_number(value)
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
        if _is_number(value) and value in (0, 1):
            return value == 1
        return value
    if json_type == "string":
        if value is None:
            return ""
        if isinstance(value, bool | int | float):
            return js_number_to_string(value)
        return value
    if json_type == "null":
        if value == "" or (_is_number(value) and value == 0) or value is False:
            return None
        return value
    return value


class _TypeBoxConverter:
    """TypeBox's ``Value.Convert`` over the schema shapes ``json_schema_for`` generates.

    pi runs it for TypeBox-built schemas; attrs classes are pi_trio's equivalent. Pure.
    """

    def __init__(self, checks: _Checks, parse_json_strings: bool) -> None:
        self._checks = checks
        self._parse_json_strings = parse_json_strings

    def convert(self, value: Any, schema: Any) -> Any:
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
            return _number(math.trunc(number)) if math.isfinite(number) else number
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

    def _object(self, value: Any, schema: JsonSchema) -> Any:
        if self._parse_json_strings:
            value = _parse_json_container(value, ("object",))
        if not isinstance(value, dict):
            return value
        out = dict(value)
        properties = schema.get("properties")
        defined = properties if isinstance(properties, dict) else {}
        for key, sub in defined.items():
            if key in out:
                out[key] = self.convert(out[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):  # dict[str, T] (TypeBox's Record converts every value too)
            for key in out:
                if key not in defined:
                    out[key] = self.convert(out[key], extra)
        return out

    def _array(self, value: Any, schema: JsonSchema) -> Any:
        if self._parse_json_strings:
            value = _parse_json_container(value, ("array",))
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):  # a tuple: converted item by item, never wrapped
            if not isinstance(value, list):
                return value
            out = list(value)
            for index, sub in enumerate(prefix[: len(out)]):
                out[index] = self.convert(out[index], sub)
            return out
        items = value if isinstance(value, list) else [value]
        return [self.convert(item, schema.get("items")) for item in items]


def _convert_literal(value: Any, literal: Any) -> Any:
    if _strict_equal(value, literal):
        return value
    kind = _json_kind(literal)
    try_fn = _TRY_BY_TYPE.get(kind)
    if try_fn is None:
        return value
    result = try_fn(value)
    return result if result is not _FAIL and _strict_equal(result, literal) else value


_BIGINT_LITERAL: Final = re.compile(r"-?(?:0|[1-9]\d*)n")


def _try_number(value: Any) -> Any:
    if isinstance(value, bool):
        return 1 if value else 0
    if _is_number(value):
        return value
    if value is None:
        return 0
    if isinstance(value, str):
        parsed = _js_string_to_number(value)
        if parsed is not None and math.isfinite(parsed):
            return parsed
        lower = value.lower()
        if lower in ("false", "true"):
            return 1 if lower == "true" else 0
        if _BIGINT_LITERAL.fullmatch(value):
            big = int(value[:-1])
            return big if abs(big) <= _MAX_SAFE_INTEGER else _FAIL
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
    if _is_number(value):
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
    if value is None or value is False or (_is_number(value) and value == 0):
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


# ---------------------------------------------------------------------------------------------
# Error text (TypeBox's en_US messages, pi's path format)
# ---------------------------------------------------------------------------------------------


def _path_text(path: Iterable[Any], leaf: str | None = None) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    if leaf is not None:
        parts.append(leaf)
    return ".".join(parts) or "root"


def _problems(errors: Iterable[ValidationError]) -> list[str]:
    """Turn jsonschema errors into pi's ``path: message`` problems, in TypeBox's order."""
    lines: list[str] = []
    seen: set[tuple[Any, ...]] = set()
    for error in errors:
        keyword = error.validator
        path = list(error.absolute_path)
        if keyword in ("anyOf", "oneOf"):
            lines.extend(_problems(error.context or ()))
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
    return js_number_to_string(value) if _is_number(value) else str(value)


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


def format_validation_error(tool_name: str, problems: list[str], arguments: Any) -> str:
    """pi's text: ``Validation failed for tool "x":`` + problems + received arguments."""
    body = "\n".join(f"  - {p}" for p in problems) or "Unknown validation error"
    return (
        f'Validation failed for tool "{tool_name}":\n{body}\n\n'
        f"Received arguments:\n{js_json_stringify(arguments)}"
    )


# ---------------------------------------------------------------------------------------------
# The validator
# ---------------------------------------------------------------------------------------------

_CONVERTER: Final = cattrs.Converter()
configure_union_passthrough(Union[str, bool, int, float, None], _CONVERTER)  # noqa: UP007


class ArgumentValidator:
    """Coerces and validates one tool's arguments; build it once per tool, call it per call.

    Everything that can be prepared is prepared in the constructor: the keyword-ordered schema,
    the compiled ``jsonschema`` validator, one compiled validator per union branch, and the fast
    check (``_fast_check``) that accepts already-valid arguments without the coercers and
    ``jsonschema``. The per-call path only walks the arguments.
    """

    __slots__ = (
        "_checks",
        "_coercer",
        "_converter",
        "_fast",
        "_schema",
        "_structure",
        "_validator",
        "_validator_schema",
        "params_type",
    )

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        structure: Callable[[Any], Any] | None = None,
        typebox_convert: bool = False,
        coerce_json_strings: bool = True,
        params_type: type | None = None,
    ) -> None:
        """Compile ``schema``.

        ``structure`` turns the validated dict into the value ``validate`` returns (default: the
        dict itself). ``typebox_convert`` adds TypeBox's ``Value.Convert`` pass, which pi applies
        to TypeBox-built schemas. Raises ``ValueError`` when the schema itself is invalid.
        """
        self._schema: JsonSchema = dict(schema)
        ordered = _ordered_schema(self._schema)
        validator_cls = _js_validators.validator_for(
            ordered, default=_js_validators.Draft202012Validator
        )
        try:
            validator_cls.check_schema(ordered)
        except SchemaError as exc:
            raise ValueError(f"invalid tool parameters schema: {exc.message}") from exc
        self._validator: Validator = validator_cls(
            ordered, format_checker=validator_cls.FORMAT_CHECKER
        )
        self._checks = _Checks(self._validator, ordered)
        self._coercer = _JsonSchemaCoercer(self._checks, coerce_json_strings)
        self._converter = (
            _TypeBoxConverter(self._checks, coerce_json_strings) if typebox_convert else None
        )
        self._structure = structure
        #: The attrs class the arguments are structured into, if any.
        self.params_type = params_type
        self._validator_schema = ordered
        self._fast = (
            compile_fast_check(ordered)
            if validator_cls is _js_validators.Draft202012Validator
            else None
        )

    @property
    def schema(self) -> JsonSchema:
        """The parameters' JSON schema, as providers should see it (shared: do not mutate)."""
        return self._schema

    @classmethod
    def for_parameters(
        cls, parameters: type | Mapping[str, Any], *, coerce_json_strings: bool = True
    ) -> ArgumentValidator:
        """Validator for an attrs class (cached per class) or a JSON-schema dict."""
        if isinstance(parameters, type):
            return _validator_for_class(parameters, coerce_json_strings)
        if isinstance(parameters, Mapping):
            return cls(parameters, coerce_json_strings=coerce_json_strings)
        raise TypeError(f"tool parameters must be an attrs class or a dict, got {parameters!r}")

    def coerce(self, arguments: Any) -> Any:
        """pi's coercions only (no validation); the input is left untouched."""
        value = arguments
        if self._converter is not None:
            value = self._converter.convert(value, self._validator_schema)
        return self._coercer.coerce(value, self._validator_schema)

    def validate(self, tool_name: str, arguments: Any) -> Any:
        """Coerce, validate and structure ``arguments``; raise ``ToolArgumentError`` if invalid.

        Returns the attrs instance for an attrs class, else the coerced dict. The error text
        shows ``arguments`` as received (before coercion), like pi.
        """
        fast = self._fast
        if fast is not None:
            value = fast(arguments)
            if value is not MISS:
                if self._structure is None:
                    return value
                return self._structured(tool_name, value, arguments)
        return self._validate_fully(tool_name, arguments)

    def _validate_fully(self, tool_name: str, arguments: Any) -> Any:
        """The full path: coerce, validate with ``jsonschema``, structure."""
        value = self.coerce(arguments)
        errors = self._validator.iter_errors(value)
        first = next(errors, None)
        if first is not None:
            problems = _problems([first, *errors])
            raise ToolArgumentError(
                format_validation_error(tool_name, problems, arguments),
                tool_name=tool_name,
                problems=problems,
            )
        if self._structure is None:
            return value
        return self._structured(tool_name, value, arguments)

    def _structured(self, tool_name: str, value: Any, arguments: Any) -> Any:
        """``value`` (valid) structured; a failure is reported with ``arguments`` as received."""
        assert self._structure is not None
        try:
            return self._structure(value)
        except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
            problems = _structure_problems(exc)
            raise ToolArgumentError(
                format_validation_error(tool_name, problems, arguments),
                tool_name=tool_name,
                problems=problems,
            ) from exc


def _structure_problems(exc: Exception) -> list[str]:
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


@functools.cache
def _validator_for_class(params_type: type, coerce_json_strings: bool) -> ArgumentValidator:
    schema = json_schema_for(params_type)

    def structure(value: Any) -> Any:
        return _CONVERTER.structure(value, params_type)

    return ArgumentValidator(
        schema,
        structure=structure,
        typebox_convert=True,
        coerce_json_strings=coerce_json_strings,
        params_type=params_type,
    )


def structure_value(value: Any, tp: Any) -> Any:
    """Structure a validated JSON value into ``tp`` with this module's cattrs converter."""
    return _CONVERTER.structure(value, tp)
