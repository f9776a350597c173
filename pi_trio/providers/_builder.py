"""Builds a streaming assistant message and the stream events that describe it.

Every provider (the scripted one included) drives one :class:`MessageBuilder` per response, so
the accumulation rules live in one place: text and thinking grow in amortised O(1) per delta;
tool-call argument JSON is collected in pieces and parsed at the end of the call (and, when the
provider asks for it, best-effort while it streams).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from ..events import (
    StreamDone,
    StreamError,
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
from ..messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    now_ms,
)
from ..models import Model
from ._partial_json import parse_partial_json

__all__ = ["ABORTED_MESSAGE", "MessageBuilder"]

ABORTED_MESSAGE = "Request was aborted"

# The events are built by object.__new__ plus their fields, not by calling the class: no
# Python __init__ call on the per-event path. Each such line says which constructor call it
# stands for; tests/test_event_construction.py checks they are whole.
_new = object.__new__


class MessageBuilder:
    """The partial :class:`AssistantMessage` of one response plus its event factory.

    Each method changes :attr:`message` and returns the event to emit. ``content_index``
    arguments are indexes into ``message.content``.
    """

    __slots__ = ("_appenders", "_args_parts", "_parsed", "message")

    def __init__(
        self, model: Model, *, timestamp: int | None = None, usage: Usage | None = None
    ) -> None:
        """``usage`` becomes the message's own (default: a fresh zero ``Usage``)."""
        self.message = AssistantMessage(
            [],
            model.api,
            model.provider,
            model.id,
            Usage() if usage is None else usage,
            "stop",
            None,
            now_ms() if timestamp is None else timestamp,
        )
        self._args_parts: dict[int, list[str]] = {}
        self._parsed: dict[int, tuple[int, int]] | None = None  # index: (size, size parsed)
        # content index -> appender() of that text/thinking block, from its first delta
        # (made on first use: the scripted model's zero-delay path never needs it)
        self._appenders: dict[int, Callable[[str], None]] | None = None

    def start(self) -> StreamStart:
        event = _new(StreamStart)  # StreamStart(self.message)
        event.extra = None
        event.partial = self.message
        return event

    # text
    def text_start(self) -> TextStart:
        content = self.message.content
        content.append(TextContent())
        event = _new(TextStart)  # TextStart(len(content) - 1, self.message)
        event.extra = None
        event.content_index = len(content) - 1
        event.partial = self.message
        return event

    def text_delta(self, index: int, delta: str) -> TextDelta:
        # per streamed delta: keep it to an append and the event
        appenders = self._appenders
        append = None if appenders is None else appenders.get(index)
        if append is None:
            append = self._appender(index, TextContent)
        append(delta)
        event = _new(TextDelta)  # TextDelta(index, delta, self.message)
        event.extra = None
        event.content_index = index
        event.delta = delta
        event.partial = self.message
        return event

    def _appender(
        self, index: int, kind: type[TextContent | ThinkingContent]
    ) -> Callable[[str], None]:
        """The appender of block ``index``, found on its first delta and kept (a start
        event stays cheap: the scripted model's zero-delay path never asks for one)."""
        block = self.message.content[index]
        if not isinstance(block, kind):
            raise TypeError(
                f"content block {index} is a {type(block).__name__}, not a {kind.__name__}"
            )
        if self._appenders is None:
            self._appenders = {}
        append = self._appenders[index] = block.appender()
        return append

    def _done_streaming(self, index: int) -> None:
        """Let go of block ``index``'s appender: the read that follows frees its piece list
        (a finished block holds one string)."""
        if self._appenders is not None:
            self._appenders.pop(index, None)

    def text_end(self, index: int, signature: str | None = None) -> TextEnd:
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        self._done_streaming(index)
        if signature is not None:
            block.text_signature = signature
        event = _new(TextEnd)  # TextEnd(index, block.text, self.message)
        event.extra = None
        event.content_index = index
        event.content = block.text
        event.partial = self.message
        return event

    # thinking
    def thinking_start(self) -> ThinkingStart:
        content = self.message.content
        content.append(ThinkingContent())
        event = _new(ThinkingStart)  # ThinkingStart(len(content) - 1, self.message)
        event.extra = None
        event.content_index = len(content) - 1
        event.partial = self.message
        return event

    def thinking_delta(self, index: int, delta: str) -> ThinkingDelta:
        appenders = self._appenders
        append = None if appenders is None else appenders.get(index)
        if append is None:
            append = self._appender(index, ThinkingContent)
        append(delta)
        event = _new(ThinkingDelta)  # ThinkingDelta(index, delta, self.message)
        event.extra = None
        event.content_index = index
        event.delta = delta
        event.partial = self.message
        return event

    def thinking_end(
        self, index: int, signature: str | None = None, redacted: bool | None = None
    ) -> ThinkingEnd:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        self._done_streaming(index)
        if signature is not None:
            block.thinking_signature = signature
        if redacted is not None:
            block.redacted = redacted
        event = _new(ThinkingEnd)  # ThinkingEnd(index, block.thinking, self.message)
        event.extra = None
        event.content_index = index
        event.content = block.thinking
        event.partial = self.message
        return event

    # tool calls
    def tool_call_start(self, id: str, name: str) -> ToolCallStart:
        content = self.message.content
        content.append(ToolCall(id, name, {}))
        index = len(content) - 1
        self._args_parts[index] = []
        event = _new(ToolCallStart)  # ToolCallStart(index, self.message)
        event.extra = None
        event.content_index = index
        event.partial = self.message
        return event

    def tool_call_delta(
        self, index: int, delta: str, *, parse_partial: bool = False
    ) -> ToolCallDelta:
        """Add a piece of argument JSON. With ``parse_partial`` the call's ``arguments`` are
        updated from the JSON so far (for UIs): at every piece while it is short, then once it
        has grown by a quarter since the last parse, so that a long argument streamed in
        small pieces costs time linear in its length (a parse is O(length))."""
        parts = self._args_parts[index]
        parts.append(delta)
        if parse_partial and self._parse_due(index, len(delta)):
            block = self.message.content[index]
            assert isinstance(block, ToolCall)
            block.arguments = parse_partial_json("".join(parts), repair=False)
        event = _new(ToolCallDelta)  # ToolCallDelta(index, delta, self.message)
        event.extra = None
        event.content_index = index
        event.delta = delta
        event.partial = self.message
        return event

    def tool_call_end(self, index: int, arguments: dict[str, Any] | None = None) -> ToolCallEnd:
        """Finish a tool call: ``arguments`` if given, else the collected JSON parsed."""
        block = self.message.content[index]
        assert isinstance(block, ToolCall)
        parts = self._args_parts.pop(index, [])
        if self._parsed is not None:
            self._parsed.pop(index, None)
        if arguments is None:
            arguments = _parse_arguments("".join(parts))
        block.arguments = arguments
        event = _new(ToolCallEnd)  # ToolCallEnd(index, block, self.message)
        event.extra = None
        event.content_index = index
        event.tool_call = block
        event.partial = self.message
        return event

    # end of stream
    def done(
        self, reason: Literal["stop", "length", "toolUse", "deferred"] | None = None
    ) -> StreamDone:
        """Finish successfully. Without ``reason``: "toolUse" if there are tool calls, else
        "stop" ("deferred" is pi-ai 1.6's: the provider finishes the response later)."""
        if self._args_parts:
            self._settle_open_calls()
        if reason is None:
            reason = "toolUse" if self.message.tool_calls else "stop"
        self.message.stop_reason = reason
        event = _new(StreamDone)  # StreamDone(reason, self.message)
        event.extra = None
        event.reason = reason
        event.message = self.message
        return event

    def error(
        self, error_message: str, reason: Literal["error", "aborted"] = "error"
    ) -> StreamError:
        """Finish with a failure; partial content is kept."""
        if self._args_parts:
            self._settle_open_calls()
        self.message.stop_reason = reason
        self.message.error_message = error_message
        return StreamError(reason, self.message)

    def _parse_due(self, index: int, added: int) -> bool:
        """Whether call ``index``'s arguments, ``added`` characters longer, are parsed again:
        at every piece up to 8 KiB, then once they have grown by a quarter."""
        parsed = self._parsed
        if parsed is None:
            parsed = self._parsed = {}
        size, done = parsed.get(index, (0, 0))
        size += added
        due = size <= _PARSE_EVERY_PIECE_UP_TO or size * 4 >= done * 5
        parsed[index] = (size, size if due else done)
        return due

    def _settle_open_calls(self) -> None:
        """Calls the stream never ended keep all the JSON that came (a partial parse may
        have been skipped for the last pieces of a long one)."""
        parsed = self._parsed or {}
        for index, parts in self._args_parts.items():
            size, done = parsed.get(index, (-1, 0))
            if size != done:
                block = self.message.content[index]
                assert isinstance(block, ToolCall)
                block.arguments = parse_partial_json("".join(parts))


_PARSE_EVERY_PIECE_UP_TO = 8_192
"""Arguments (characters) parsed again at every streamed piece; longer ones, once they have
grown by a quarter."""


def _parse_arguments(text: str) -> dict[str, Any]:
    if text == "{}":  # the usual answer of a tool without parameters
        return {}
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep to read
        value = parse_partial_json(text)
    return value if isinstance(value, dict) else {}
