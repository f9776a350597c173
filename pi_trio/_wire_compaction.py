"""pi-coding-agent 1.6's JSON for the compaction events (its RPC and ``AgentSessionEvent``):
``{"type": "compaction_start", "reason": ...}`` and ``{"type": "compaction_end", "reason",
"result": {"summary", "tokensBefore", ...} (absent when there is no summary), "aborted",
"willRetry", "errorMessage" (when it failed)}``. Keys pi_trio does not model (``result``'s
``firstKeptEntryId`` included) are kept and written back unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import cattrs

from ._wire_values import Invalid, describe
from .events import CompactionEnd, CompactionStart

__all__ = ["register_compaction_events"]

_REASONS = ("threshold", "overflow", "manual")
_END_KEYS = frozenset({"type", "reason", "result", "aborted", "willRetry", "errorMessage"})
_RESULT_KEYS = frozenset({"summary", "tokensBefore"})


def _reason(data: Mapping[str, Any]) -> Any:
    reason = data.get("reason")
    if reason not in _REASONS:
        raise Invalid(f"reason must be one of {', '.join(_REASONS)}, got {describe(reason)}")
    return reason


def _start_json(event: CompactionStart) -> dict[str, Any]:
    return {"type": "compaction_start", "reason": event.reason, **(event.extra or {})}


def _start(data: Any, _: Any) -> CompactionStart:
    if not isinstance(data, Mapping):
        raise Invalid(f"expected an object, got {describe(data)}")
    extra = {k: v for k, v in data.items() if k not in ("type", "reason")}
    return CompactionStart(_reason(data), extra=extra or None)


def _end_json(event: CompactionEnd) -> dict[str, Any]:
    extra = dict(event.extra or {})
    kept_result = extra.pop("result", None)
    out: dict[str, Any] = {"type": "compaction_end", "reason": event.reason}
    if event.summary is not None:
        result = {"summary": event.summary, "tokensBefore": event.tokens_before}
        out["result"] = {**result, **(kept_result or {})}
    elif kept_result is not None:  # a result pi_trio reads no summary from: as it came
        out["result"] = kept_result
    out["aborted"] = event.aborted
    out["willRetry"] = event.will_retry
    if event.error is not None:
        out["errorMessage"] = event.error
    return {**out, **extra}


def _end(data: Any, _: Any) -> CompactionEnd:
    if not isinstance(data, Mapping):
        raise Invalid(f"expected an object, got {describe(data)}")
    result = data.get("result")
    if result is not None and not isinstance(result, Mapping):
        raise Invalid(f"result must be an object, got {describe(result)}")
    summary = result.get("summary") if result else None
    tokens = result.get("tokensBefore", 0) if result else 0
    error = data.get("errorMessage")
    if not isinstance(summary, str | None) or not isinstance(error, str | None):
        raise Invalid("result.summary and errorMessage must be strings")
    if isinstance(tokens, bool) or not isinstance(tokens, int):
        raise Invalid(f"result.tokensBefore must be a whole number, got {tokens!r}")
    for key in ("aborted", "willRetry"):
        if not isinstance(data.get(key, False), bool):
            raise Invalid(f"{key} must be true or false, got {describe(data.get(key))}")
    extra = {k: v for k, v in data.items() if k not in _END_KEYS}
    kept_result = {k: v for k, v in (result or {}).items() if k not in _RESULT_KEYS}
    if kept_result:
        extra["result"] = kept_result
    return CompactionEnd(
        summary,
        tokens,
        error,
        reason=_reason(data),
        aborted=data.get("aborted", False),
        will_retry=data.get("willRetry", False),
        extra=extra or None,
    )


def register_compaction_events(conv: cattrs.Converter) -> None:
    """The hooks of both events on ``conv``."""
    conv.register_unstructure_hook(CompactionStart, _start_json)
    conv.register_structure_hook(CompactionStart, _start)
    conv.register_unstructure_hook(CompactionEnd, _end_json)
    conv.register_structure_hook(CompactionEnd, _end)
