"""JavaScript value semantics that pi's texts and coercions depend on, in one place.

pi runs in JavaScript: its error texts print numbers with ``String(n)`` and arguments with
``JSON.stringify``, and its coercions parse text with ``Number(text)`` and compare with ``===``.
Python differs on each (``str(1.0)`` is ``1.0``, ``float(" 0x1f")`` fails, ``1 == True``), so
schema generation, coercion and error rendering all use these helpers to behave like pi does,
byte for byte. No helper here knows about schemas.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "JS_WHITESPACE",
    "MAX_SAFE_INTEGER",
    "is_number",
    "js_float",
    "js_json_stringify",
    "js_number_to_string",
    "js_strict_equal",
    "js_string_to_number",
    "json_kind",
    "prefer_int",
]

#: ``Number.MAX_SAFE_INTEGER``: the largest integer a JavaScript number holds exactly.
MAX_SAFE_INTEGER: Final = 2**53 - 1

#: JavaScript's StrWhiteSpaceChar set (what ``Number()`` and ``String.prototype.trim()`` strip).
JS_WHITESPACE: Final = " \t\n\v\f\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
)
_JS_DECIMAL: Final = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_JS_RADIX: Final = re.compile(
    r"0(?:[xX](?P<hex>[0-9a-fA-F]+)|[oO](?P<oct>[0-7]+)|[bB](?P<bin>[01]+))"
)


def js_number_to_string(value: float) -> str:
    """Render a number like JavaScript's ``String(n)`` (``1.0`` -> ``1``, ``1e21`` -> ``1e+21``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) < 10**21:
        return str(value)
    number = js_float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(number)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = exponent + k  # position of the decimal point relative to the digits
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return f"-{text}" if sign else text


def js_json_stringify(value: Any, indent: int = 2) -> str:
    """Render a JSON value like ``JSON.stringify(value, null, indent)`` does in JavaScript."""
    return _stringify(value, " " * indent, "")


def _stringify(value: Any, step: str, current: str) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number_to_string(value) if math.isfinite(js_float(value)) else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    inner = current + step
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_stringify(v, step, inner)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{current}}}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = [f"{inner}{_stringify(v, step, inner)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{current}]"
    return json.dumps(str(value), ensure_ascii=False)


def js_float(value: float) -> float:
    """The JavaScript number closest to ``value``: ``float(value)``, but an ``int`` beyond the
    largest double is ``Infinity`` (as ``JSON.parse`` reads such a literal), not an error."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def prefer_int(value: float) -> int | float:
    """``value`` as an ``int`` when it is integral and safe (JSON has one number type; cattrs and
    the fast check want ``int``), else unchanged."""
    if math.isfinite(value) and float(value).is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    return value


def js_string_to_number(text: str) -> int | float | None:
    """JavaScript's ``Number(text)``, with ``None`` standing for NaN.

    Surrounding JavaScript whitespace is ignored, the empty string is 0, ``0x``/``0o``/``0b``
    prefixes and ``Infinity`` are understood, and anything else that is not a decimal literal
    is NaN (so ``"1_000"`` and ``"nan"`` are, unlike for Python's ``float``).
    """
    stripped = text.strip(JS_WHITESPACE)
    if not stripped:
        return 0
    radix = _JS_RADIX.fullmatch(stripped)
    if radix:
        if radix["hex"]:
            return prefer_int(js_float(int(radix["hex"], 16)))
        if radix["oct"]:
            return prefer_int(js_float(int(radix["oct"], 8)))
        return prefer_int(js_float(int(radix["bin"], 2)))
    if _JS_DECIMAL.fullmatch(stripped):
        if stripped.endswith("Infinity"):
            return -math.inf if stripped.startswith("-") else math.inf
        return prefer_int(float(stripped))
    return None


def js_strict_equal(a: Any, b: Any) -> bool:
    """JavaScript's ``===``: primitives by kind and value, arrays and objects by identity."""
    kind = json_kind(a)
    if kind != json_kind(b):
        return False
    if kind in ("array", "object", "other"):
        return a is b
    return bool(a == b)


def is_number(value: Any) -> bool:
    """A JSON number: ``int`` or ``float``, not ``bool``."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_kind(value: Any) -> str:
    """The JSON kind of a value (``"number"`` for ``int`` and ``float``; ``"other"`` if none)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "other"
