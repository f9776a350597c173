"""One line of pi's RPC protocol as JSON: strict on the way in (no NaN; a lone surrogate read
as U+FFFD, the command's id kept), and never failing on the way out (as ``JSON.stringify``
writes them, a non-finite number is null and a text UTF-8 cannot carry is its escape)."""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

__all__ = ["decode", "encode"]

_ABSENT = object()


def encode(value: Any) -> bytes:
    """One protocol line (without the newline): compact JSON, UTF-8, written as
    ``JSON.stringify`` writes it: NaN and the infinities (a sum of huge costs, an id of
    ``1e400``) as ``null``, a text UTF-8 cannot carry (a lone surrogate, from a tool's output
    say) as its ``\\u`` escape, rather than failing the line."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=_COMPACT, allow_nan=False)
    except ValueError:  # rare: only then is the value walked
        value = _finite(value)
        text = json.dumps(value, ensure_ascii=False, separators=_COMPACT, allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=_COMPACT, allow_nan=False).encode()


_COMPACT = (",", ":")


def _finite(value: Any) -> Any:
    """``value`` with None for each float JSON cannot write (NaN, an infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def decode(line: bytes) -> Any:
    """Parse one line as strict JSON (NaN and Infinity are rejected). A lone surrogate (an
    escape such as ``"\\ud800"``, which JSON allows and no UTF-8 text holds) becomes U+FFFD,
    as a session's log stores it: the run, its events and its log then agree. The command's
    ``id`` is kept as sent, so that its response carries it back (escaped)."""
    value = json.loads(line, parse_constant=_reject_constant)
    if _SURROGATE_ESCAPE.search(line) is not None:  # rare: only then is the value walked
        sent_id = copy.deepcopy(value.get("id", _ABSENT)) if isinstance(value, dict) else _ABSENT
        value = _without_lone_surrogates(value)
        if sent_id is not _ABSENT:
            value["id"] = sent_id
    return value


def _fixed(text: str) -> str:
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _without_lone_surrogates(value: Any) -> Any:
    """``value`` (fresh from ``json.loads``) with U+FFFD for each lone surrogate, changed in
    place without recursion (the parser took nesting Python's stack would not)."""
    if isinstance(value, str):
        return _fixed(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for index, inner in enumerate(item):
                if isinstance(inner, str):
                    item[index] = _fixed(inner)
                elif isinstance(inner, list | dict):
                    stack.append(inner)
        elif isinstance(item, dict):
            for key, inner in list(item.items()):
                if isinstance(inner, str):
                    inner = _fixed(inner)
                elif isinstance(inner, list | dict):
                    stack.append(inner)
                fixed_key = _fixed(key)
                if fixed_key != key:
                    del item[key]
                item[fixed_key] = inner
    return value
