"""JavaScript semantics that pi's texts depend on: ``String(n)``, ``JSON.stringify``, JSON kinds.

Shared by schema generation and validation, so both render numbers and values byte for byte
like pi does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

__all__ = ["MAX_SAFE_INTEGER", "is_number", "js_json_stringify", "js_number_to_string", "json_kind"]

MAX_SAFE_INTEGER: Final = 2**53 - 1


def js_number_to_string(value: float) -> str:
    """Render a number like JavaScript's ``String(n)`` (``1.0`` -> ``1``, ``1e21`` -> ``1e+21``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) < 10**21:
        return str(value)
    number = float(value)
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
        return js_number_to_string(value) if math.isfinite(value) else "null"
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


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_kind(value: Any) -> str:
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
