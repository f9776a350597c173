"""pi's proxy protocol: the request body and the compact events, as records and encoders.

A client POSTs ``{"model": ..., "context": ..., "options": ...}`` to ``/api/stream``; the
server answers with Server-Sent Events, one ``data: {json}`` line per event. The events are
pi-ai's stream events without their ``partial`` message (the client rebuilds it), so a delta
costs a few bytes instead of the whole message so far. The records below are the schema:
the client reads events through them (``pt.from_json(data, ProxyEvent)``), the server reads
the request body through :class:`ProxyRequest`, and :func:`encode_event` writes the events.

Two optional fields go beyond pi 0.73.1, which drops them (pi's client ignores unknown
fields): ``redacted`` on ``thinking_end`` and ``thoughtSignature`` on ``toolcall_end``.
Without them a redacted Anthropic thinking block or a Gemini tool call cannot be replayed.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias, cast

import attrs

from .. import wire
from ..events import (
    StreamDone,
    StreamError,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..messages import Context, TextContent, ThinkingContent, ToolCall, Usage
from ..models import Model, ThinkingLevel
from ..providers import CacheRetention, StreamOptions, ThinkingBudgets

__all__ = [
    "PROXY_EVENT_TYPES",
    "ProxyDone",
    "ProxyError",
    "ProxyEvent",
    "ProxyOptions",
    "ProxyRequest",
    "ProxyStart",
    "ProxyTextDelta",
    "ProxyTextEnd",
    "ProxyTextStart",
    "ProxyThinkingDelta",
    "ProxyThinkingEnd",
    "ProxyThinkingStart",
    "ProxyToolCallDelta",
    "ProxyToolCallEnd",
    "ProxyToolCallStart",
    "encode_event",
    "request_body",
]


# --- events --------------------------------------------------------------------------------


@attrs.frozen
class ProxyStart:
    type: ClassVar[Literal["start"]] = "start"


@attrs.frozen
class ProxyTextStart:
    type: ClassVar[Literal["text_start"]] = "text_start"
    content_index: int


@attrs.frozen
class ProxyTextDelta:
    type: ClassVar[Literal["text_delta"]] = "text_delta"
    content_index: int
    delta: str


@attrs.frozen
class ProxyTextEnd:
    type: ClassVar[Literal["text_end"]] = "text_end"
    content_index: int
    content_signature: str | None = None


@attrs.frozen
class ProxyThinkingStart:
    type: ClassVar[Literal["thinking_start"]] = "thinking_start"
    content_index: int


@attrs.frozen
class ProxyThinkingDelta:
    type: ClassVar[Literal["thinking_delta"]] = "thinking_delta"
    content_index: int
    delta: str


@attrs.frozen
class ProxyThinkingEnd:
    type: ClassVar[Literal["thinking_end"]] = "thinking_end"
    content_index: int
    content_signature: str | None = None
    redacted: bool | None = None  # extension, see the module doc


@attrs.frozen
class ProxyToolCallStart:
    type: ClassVar[Literal["toolcall_start"]] = "toolcall_start"
    content_index: int
    id: str
    tool_name: str


@attrs.frozen
class ProxyToolCallDelta:
    type: ClassVar[Literal["toolcall_delta"]] = "toolcall_delta"
    content_index: int
    delta: str


@attrs.frozen
class ProxyToolCallEnd:
    type: ClassVar[Literal["toolcall_end"]] = "toolcall_end"
    content_index: int
    thought_signature: str | None = None  # extension, see the module doc


@attrs.frozen
class ProxyDone:
    type: ClassVar[Literal["done"]] = "done"
    reason: Literal["stop", "length", "toolUse"]
    usage: Usage


@attrs.frozen
class ProxyError:
    type: ClassVar[Literal["error"]] = "error"
    reason: Literal["aborted", "error"]
    usage: Usage
    error_message: str | None = None


ProxyEvent: TypeAlias = (
    ProxyStart
    | ProxyTextStart
    | ProxyTextDelta
    | ProxyTextEnd
    | ProxyThinkingStart
    | ProxyThinkingDelta
    | ProxyThinkingEnd
    | ProxyToolCallStart
    | ProxyToolCallDelta
    | ProxyToolCallEnd
    | ProxyDone
    | ProxyError
)

_EVENT_CLASSES = (
    ProxyStart, ProxyTextStart, ProxyTextDelta, ProxyTextEnd, ProxyThinkingStart,
    ProxyThinkingDelta, ProxyThinkingEnd, ProxyToolCallStart, ProxyToolCallDelta,
    ProxyToolCallEnd, ProxyDone, ProxyError,
)  # fmt: skip

PROXY_EVENT_TYPES = frozenset(cls.type for cls in _EVENT_CLASSES)
"""The ``type`` strings of pi's proxy events; a client ignores any other (pi does too)."""


# --- the request ---------------------------------------------------------------------------


@attrs.frozen
class ProxyOptions:
    """The serialisable stream options pi's client sends (``maxRetryDelayMs`` in ms)."""

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning: ThinkingLevel | None = None
    cache_retention: CacheRetention | None = None
    session_id: str | None = None
    headers: dict[str, str] | None = None
    metadata: dict[str, Any] | None = None
    transport: str | None = None
    thinking_budgets: ThinkingBudgets | None = None
    max_retry_delay_ms: float | None = None


@attrs.frozen
class ProxyRequest:
    """The body of ``POST /api/stream``."""

    model: Model
    context: Context
    options: ProxyOptions = attrs.field(factory=ProxyOptions)


wire.register_records(*_EVENT_CLASSES, union=ProxyEvent)
wire.register_records(ThinkingBudgets, ProxyOptions, ProxyRequest)


def request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body pi's ``streamProxy`` would send for this request.

    Only the serialisable options travel; the key, the HTTP client and the timeouts stay
    local.
    """
    proxy_options = ProxyOptions(
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        reasoning=options.reasoning,
        cache_retention=options.cache_retention,
        session_id=options.session_id,
        headers=dict(options.headers) if options.headers is not None else None,
        metadata=dict(options.metadata) if options.metadata is not None else None,
        thinking_budgets=options.thinking_budgets,
        max_retry_delay_ms=round(options.max_retry_delay * 1000),
    )
    return {
        "model": wire.to_json(model),
        "context": wire.to_json(context),
        "options": wire.to_json(proxy_options),
    }


# --- encoding (server side) -------------------------------------------------------------------


def encode_event(event: StreamEvent) -> dict[str, Any]:
    """The compact proxy event for a stream event: the same event without ``partial``.

    Built by hand rather than through the converter: this runs once per streamed delta.
    """
    cls = type(event)
    if cls is TextDelta or cls is ThinkingDelta or cls is ToolCallDelta:
        delta = cast(TextDelta, event)
        return {"type": cls.type, "contentIndex": delta.content_index, "delta": delta.delta}
    if cls is StreamStart:
        return {"type": "start"}
    if cls is TextStart or cls is ThinkingStart:
        return {"type": cls.type, "contentIndex": cast(TextStart, event).content_index}
    if isinstance(event, TextEnd):
        out: dict[str, Any] = {"type": "text_end", "contentIndex": event.content_index}
        text = event.partial.content[event.content_index]
        if isinstance(text, TextContent) and text.text_signature is not None:
            out["contentSignature"] = text.text_signature
        return out
    if isinstance(event, ThinkingEnd):
        out = {"type": "thinking_end", "contentIndex": event.content_index}
        block = event.partial.content[event.content_index]
        if isinstance(block, ThinkingContent):
            if block.thinking_signature is not None:
                out["contentSignature"] = block.thinking_signature
            if block.redacted:
                out["redacted"] = True
        return out
    if isinstance(event, ToolCallStart):
        call = event.partial.content[event.content_index]
        assert isinstance(call, ToolCall)
        return {
            "type": "toolcall_start",
            "contentIndex": event.content_index,
            "id": call.id,
            "toolName": call.name,
        }
    if isinstance(event, ToolCallEnd):
        out = {"type": "toolcall_end", "contentIndex": event.content_index}
        if event.tool_call.thought_signature is not None:
            out["thoughtSignature"] = event.tool_call.thought_signature
        return out
    if isinstance(event, StreamDone):
        return {"type": "done", "reason": event.reason, "usage": wire.to_json(event.message.usage)}
    if isinstance(event, StreamError):
        return error_event(event.reason, event.error.error_message, event.error.usage)
    raise TypeError(f"not a stream event: {event!r}")


def error_event(
    reason: Literal["aborted", "error"], message: str | None, usage: Usage | None = None
) -> dict[str, Any]:
    """An ``error`` proxy event (also for failures the server detects itself)."""
    out: dict[str, Any] = {"type": "error", "reason": reason}
    if message is not None:
        out["errorMessage"] = message
    out["usage"] = wire.to_json(usage if usage is not None else Usage())
    return out
