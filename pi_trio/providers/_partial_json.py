"""Best-effort parsing of an incomplete JSON object, for tool-call arguments mid-stream."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_partial_json", "repair_escapes"]


_ESCAPE = re.compile(r'(\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}|u[0-9a-fA-F]{0,3}\Z|\Z))|(\\)')
"""A backslash and what follows it: a JSON escape, or one the stream has not finished yet
(group 1: kept), or a lone backslash (group 2: doubled)."""


def _repaired(match: re.Match[str]) -> str:
    return match.group(1) or "\\\\"


def repair_escapes(text: str) -> str:
    """``text`` with each backslash that starts no JSON escape doubled (``"\\d+"`` as a model
    writes a regex means a backslash and a ``d``), as pi-ai repairs arguments; one that ends
    the text may be an escape still streaming, and is kept. Raw control characters in
    strings need no repair: they are parsed with ``strict=False``. (A backslash outside a
    string is invalid JSON either way.)"""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(_repaired, text)


def _loads(text: str) -> Any:
    return json.loads(text, strict=False)  # raw control characters in strings: kept


def parse_partial_json(text: str, *, repair: bool = True) -> dict[str, Any]:
    """The object that ``text`` starts, closing any open string, array or object, and
    (``repair``) repairing what models get wrong in strings: a raw control character is
    always kept, a backslash that starts no escape is doubled. A streaming display may skip
    that repair (a regex pass per piece); the arguments a call ends with have it.

    Returns ``{}`` when nothing useful can be recovered. Never raises.
    """
    if not text.strip():
        return {}
    try:
        return _whole_or_partial(text, repair)
    except (RecursionError, MemoryError):
        return {}


def _whole_or_partial(text: str, repair: bool) -> dict[str, Any]:
    try:
        value = _loads(text)
        return value if isinstance(value, dict) else {}
    except ValueError:
        pass
    if repair:
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
