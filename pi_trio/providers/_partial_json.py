"""Best-effort parsing of an incomplete JSON object, for tool-call arguments mid-stream."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_partial_json", "repair_escapes"]


_ESCAPES = frozenset('"\\/bfnrtu')
_HEX = frozenset("0123456789abcdefABCDEF")


def repair_escapes(text: str) -> str:
    """``text`` with each backslash that starts no JSON escape inside a string doubled
    (``"\\d+"`` as a model writes a regex means a backslash and a ``d``), as pi-ai repairs
    arguments. Raw control characters in strings need no repair: they are parsed with
    ``strict=False``."""
    if "\\" not in text:
        return text
    out: list[str] = []
    in_string = False
    index, size = 0, len(text)
    while index < size:
        ch = text[index]
        if in_string and ch == "\\":
            following = text[index + 1 : index + 2]
            hex_digits = text[index + 2 : index + 6]
            if not following or (following == "u" and index + 6 > size and set(hex_digits) <= _HEX):
                out.append(text[index:])  # an escape the stream has not finished yet
                break
            if following == "u" and len(hex_digits) == 4 and set(hex_digits) <= _HEX:
                out.append(text[index : index + 6])
                index += 6
                continue
            if following and following != "u" and following in _ESCAPES:
                out.append(ch + following)
                index += 2
                continue
            out.append("\\\\")  # no escape starts here: a backslash of its own
            index += 1
            continue
        if ch == '"':
            in_string = not in_string
        out.append(ch)
        index += 1
    return "".join(out)


def _loads(text: str) -> Any:
    return json.loads(text, strict=False)  # raw control characters in strings: kept


def parse_partial_json(text: str) -> dict[str, Any]:
    """The object that ``text`` starts, closing any open string, array or object, and
    repairing what models get wrong in strings (raw control characters, a backslash that
    starts no escape).

    Returns ``{}`` when nothing useful can be recovered. Never raises.
    """
    if not text.strip():
        return {}
    try:
        return _whole_or_partial(text)
    except (RecursionError, MemoryError):
        return {}


def _whole_or_partial(text: str) -> dict[str, Any]:
    try:
        value = _loads(text)
        return value if isinstance(value, dict) else {}
    except ValueError:
        pass
    text = repair_escapes(text)
    closers: list[str] = []
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        elif ch in "}]" and closers:
            closers.pop()
    candidate = text
    if in_string:
        if escaped:
            candidate = candidate[:-1]
        candidate += '"'
    # Drop a dangling key, colon or comma, then close what is open.
    for _ in range(3):
        attempt = candidate.rstrip().rstrip(",:")
        try:
            value = _loads(attempt + "".join(reversed(closers)))
            return value if isinstance(value, dict) else {}
        except ValueError:
            # remove a trailing incomplete token (key without value, partial literal)
            cut = max(attempt.rfind(","), attempt.rfind("{"), attempt.rfind("["))
            if cut < 0:
                break
            candidate = attempt[: cut + 1] if attempt[cut] in "{[" else attempt[:cut]
    return {}
