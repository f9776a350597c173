"""pi-ai's stream events (its ``AssistantMessageEvent``): what a provider emits while a
response streams. :mod:`pi_trio.events` exports them with the agent events; see its docstring
for what they share (slotted attrs records compared by value, ``partial`` the live message)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias, final

import attrs

from ._errors import ProviderError
from .messages import NOT_ON_WIRE, AssistantMessage, ToolCall, kept_field

__all__ = [
    "StreamDone",
    "StreamError",
    "StreamEvent",
    "StreamStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
]


# --- stream events (pi-ai's AssistantMessageEvent) -------------------------------------------


@final
@attrs.define(unsafe_hash=True)
class StreamStart:
    """The response began; ``partial`` is the (still empty) assistant message being built."""

    type: ClassVar[Literal["start"]] = "start"
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class TextStart:
    """A text block opened at ``partial.content[content_index]``."""

    type: ClassVar[Literal["text_start"]] = "text_start"
    content_index: int
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class TextDelta:
    """``delta`` was appended to the text block at ``content_index``."""

    type: ClassVar[Literal["text_delta"]] = "text_delta"
    content_index: int
    delta: str
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class TextEnd:
    """The text block at ``content_index`` is complete; ``content`` is its whole text."""

    type: ClassVar[Literal["text_end"]] = "text_end"
    content_index: int
    content: str
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class ThinkingStart:
    """A reasoning block opened at ``partial.content[content_index]``."""

    type: ClassVar[Literal["thinking_start"]] = "thinking_start"
    content_index: int
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class ThinkingDelta:
    """``delta`` was appended to the reasoning block at ``content_index``."""

    type: ClassVar[Literal["thinking_delta"]] = "thinking_delta"
    content_index: int
    delta: str
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class ThinkingEnd:
    """The reasoning block at ``content_index`` is complete; ``content`` is its text."""

    type: ClassVar[Literal["thinking_end"]] = "thinking_end"
    content_index: int
    content: str
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class ToolCallStart:
    """A tool call opened at ``partial.content[content_index]``."""

    type: ClassVar[Literal["toolcall_start"]] = "toolcall_start"
    content_index: int
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class ToolCallDelta:
    """``delta`` (raw JSON text) was added to the arguments of the tool call at
    ``content_index``."""

    type: ClassVar[Literal["toolcall_delta"]] = "toolcall_delta"
    content_index: int
    delta: str
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class ToolCallEnd:
    """The tool call at ``content_index`` is complete; ``tool_call`` has its final arguments."""

    type: ClassVar[Literal["toolcall_end"]] = "toolcall_end"
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class StreamDone:
    """The response finished; ``message`` is final. ``reason`` is "stop", "length", "toolUse"
    or pi-ai 1.6's "deferred"."""

    type: ClassVar[Literal["done"]] = "done"
    reason: Literal["stop", "length", "toolUse", "deferred"]
    message: AssistantMessage
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(unsafe_hash=True)
class StreamError:
    """The response failed; ``error`` is the final assistant message ("error" or "aborted").

    ``provider_error`` (pi_trio's addition, not in pi's JSON): the failure as a
    :class:`pi_trio.ProviderError` record (kind, HTTP status, retry facts) when a built-in
    provider failed; ``None`` for an abort or a stream function that gives none.
    """

    type: ClassVar[Literal["error"]] = "error"
    reason: Literal["error", "aborted"]
    error: AssistantMessage
    extra: dict[str, Any] | None = kept_field()
    provider_error: ProviderError | None = attrs.field(
        default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE
    )


StreamEvent: TypeAlias = (
    StreamStart
    | TextStart
    | TextDelta
    | TextEnd
    | ThinkingStart
    | ThinkingDelta
    | ThinkingEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | StreamDone
    | StreamError
)
