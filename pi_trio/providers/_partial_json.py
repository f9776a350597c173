"""Best-effort parsing of an incomplete JSON object, for tool-call arguments mid-stream."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_partial_json"]


def parse_partial_json(text: str) -> dict[str, Any]:
    """The object that ``text`` starts, closing any open string, array or object.

    Returns ``{}`` when nothing useful can be recovered. Never raises.
    """
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
        return value if isinstance(value, dict) else {}
    except ValueError:
        pass
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
            value = json.loads(attempt + "".join(reversed(closers)))
            return value if isinstance(value, dict) else {}
        except ValueError:
            # remove a trailing incomplete token (key without value, partial literal)
            cut = max(attempt.rfind(","), attempt.rfind("{"), attempt.rfind("["))
            if cut < 0:
                break
            candidate = attempt[: cut + 1] if attempt[cut] in "{[" else attempt[:cut]
    return {}
