"""The values under pi's wire format: strict primitives, free-form JSON, and error texts.

This is the part of :mod:`pi_trio.wire` that knows nothing of records or converters:

- the strict structure hooks for ``str``/``int``/``float``/``bool`` (a string where a number
  belongs is an error, never a coercion);
- :func:`json_walkers`, the read check and the write copy of free-form values (tool arguments,
  details, ``compat``, metadata) with the nesting limit, so that a hostile document is refused
  with the path of the spot where it nests too deeply instead of exhausting the stack;
- :func:`problems`, which turns a cattrs error into pi_trio's ``path: what is wrong`` texts.

Walking costs one call per nested array/object, none per scalar, and no path string is built
unless a value is refused (the path is put together while the error unwinds).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, cast

import cattrs

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "Invalid",
    "camel",
    "describe",
    "json_walkers",
    "problems",
    "structure_bool",
    "structure_float",
    "structure_int",
    "structure_str",
]

DEFAULT_MAX_DEPTH = 64
"""How many arrays/objects a free-form value may nest, by default (pi's own data: under 10)."""


class Invalid(ValueError):
    """A value that does not fit; its text is the whole explanation.

    ``subpath`` locates the problem inside the value (``.a[2]``) for free-form JSON values.
    """

    def __init__(self, message: str, subpath: str = "") -> None:
        super().__init__(message)
        self.subpath = subpath


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


# --- strict primitives ---------------------------------------------------------------------


def structure_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise Invalid(f"expected a string, got {describe(value)}")
    return value


def structure_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid(f"expected an integer, got {describe(value)}")
    if isinstance(value, float):
        if not value.is_integer():
            raise Invalid(f"expected an integer, got {value!r}")
        return int(value)
    return value


def structure_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid(f"expected a number, got {describe(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise Invalid(f"expected a finite number, got {value!r}")
    return value  # an int stays an int, so JSON written back is identical


def structure_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected a boolean, got {describe(value)}")
    return value


# --- free-form JSON, with the nesting limit ------------------------------------------------

_SCALARS = (str, int, bool, type(None))


def _key_path(key: Any) -> str:
    return f".{key}" if isinstance(key, str) else f"[{key!r}]"


def json_walkers(
    max_depth: int, unstructure: Callable[[Any], Any]
) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """``(check, copy)`` for free-form values nesting at most ``max_depth`` arrays/objects.

    ``check(value)`` returns ``value`` itself if it is a JSON value (no NaN or infinity, string
    keys only) within the limit; ``copy(value)`` returns a fresh copy for writing, handing any
    value that is not plain JSON (an attrs record in ``details``, say) to ``unstructure`` and
    walking its result on. Both raise :class:`Invalid` whose ``subpath`` locates the problem:
    the array or object that crossed the limit, or the value that is not JSON.
    """
    too_deep = f"nested deeper than {max_depth} arrays/objects (the wire format's max_depth)"

    def check(value: Any, depth: int = max_depth) -> Any:
        if isinstance(value, _SCALARS):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise Invalid(f"not a JSON number: {value!r}")
            return value
        if isinstance(value, list):
            if depth <= 0:
                raise Invalid(too_deep)
            item: Any = None
            try:
                for item in value:
                    if not isinstance(item, _SCALARS):
                        check(item, depth - 1)
            except Invalid as exc:  # the first item that is ``item`` is the one that failed
                index = next(i for i, other in enumerate(value) if other is item)
                exc.subpath = f"[{index}]{exc.subpath}"
                raise
            return value
        if isinstance(value, dict):
            if depth <= 0:
                raise Invalid(too_deep)
            key: Any = None
            try:
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise Invalid(f"object key {key!r} is not a string")
                    if not isinstance(item, _SCALARS):
                        check(item, depth - 1)
            except Invalid as exc:
                if isinstance(key, str):
                    exc.subpath = f".{key}{exc.subpath}"
                raise
            return value
        raise Invalid(f"not a JSON value: {type(value).__name__}")

    def copy(value: Any, depth: int = max_depth) -> Any:
        cls = value.__class__
        if cls is str or cls is int or cls is float or cls is bool or value is None:
            return value
        if cls is list or cls is tuple:
            if depth <= 0:
                raise Invalid(too_deep)
            out: list[Any] = []
            append = out.append
            try:
                for item in value:
                    c = item.__class__
                    if c is str or c is int or c is float or c is bool or item is None:
                        append(item)
                    else:
                        append(copy(item, depth - 1))
            except Invalid as exc:
                exc.subpath = f"[{len(out)}]{exc.subpath}"  # the item that failed
                raise
            return out  # a tuple is written as an array, as cattrs does
        if cls is dict:
            if depth <= 0:
                raise Invalid(too_deep)
            result: dict[Any, Any] = {}
            key: Any = None
            try:
                for key, item in value.items():
                    c = item.__class__
                    if c is str or c is int or c is float or c is bool or item is None:
                        result[key] = item
                    else:
                        result[key] = copy(item, depth - 1)
            except Invalid as exc:
                exc.subpath = f"{_key_path(key)}{exc.subpath}"
                raise
            return result
        plain = unstructure(value)  # a record, an enum, ...: its hooks, then the limit
        if plain is value or not isinstance(plain, list | tuple | dict):
            return plain
        return copy(plain, depth)

    return check, copy


# --- error texts ----------------------------------------------------------------------------

_PATH_SUFFIX = re.compile(r" @ \$(?P<path>\S*)$")
_SUBPATH = "\x1f"
_SEGMENT = re.compile(r"\.([A-Za-z0-9_]+)")


def _format_exception(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, Invalid):
        return f"{exc.subpath}{_SUBPATH}{exc}" if exc.subpath else str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, ValueError | TypeError) and type_ is not None:
        text = str(exc)
        return text if text else f"invalid value for {getattr(type_, '__name__', type_)}"
    return f"{type(exc).__name__}: {exc}"


def problems(exc: BaseException) -> list[str]:
    """Every problem in a structuring error, as ``path: what is wrong`` (pi's JSON keys)."""
    found = []
    for line in cattrs.transform_error(
        cast(Exception, exc), path="$", format_exception=_format_exception
    ):
        match = _PATH_SUFFIX.search(line)
        if match:
            # attribute names -> pi's JSON keys; a free-form value adds its own sub-path
            path = _SEGMENT.sub(lambda m: "." + camel(m.group(1)), match.group("path"))
            text = line[: match.start()]
            if _SUBPATH in text:
                subpath, text = text.split(_SUBPATH, 1)
                path += subpath
            found.append(f"{path.lstrip('.') or '(root)'}: {text}")
        else:
            found.append(line)
    return found
