"""Rendering agent events as terminal text: streamed deltas, tool calls with timings.

Colours (ANSI) are used only when the output is a terminal and ``NO_COLOR`` is unset, so
piped output is plain text. The printer is a synchronous agent listener: it only writes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

import attrs
import trio

from ..events import (
    AgentEvent,
    CompactionEnd,
    CompactionStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    TextDelta,
    ThinkingDelta,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from ..messages import AssistantMessage, TextContent, UserMessage

__all__ = ["EventPrinter", "OutputGone", "Style", "short", "text_of"]


def wants_color(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal and the user has not asked for no colour."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ and os.name != "nt"


@attrs.frozen
class Style:
    """ANSI styling that turns into plain text when ``color`` is false."""

    color: bool = False

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def magenta(self, text: str) -> str:
        return self._wrap("35", text)


def short(value: Any, limit: int = 60) -> str:
    """A one-line preview of ``value`` (JSON for non-strings), cut at ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def text_of(message: Any) -> str:
    """The text blocks of a message joined (a string content as is)."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def compaction_line(event: CompactionEnd, s: Style) -> str:
    """How a finished compaction is shown."""
    if event.summary is not None:
        return s.dim(f"[compacted: {event.tokens_before} tokens of context summarised]")
    if event.aborted:
        return s.yellow("[compaction aborted: the conversation is unchanged]")
    if event.error is not None:
        return s.red(f"[compaction failed: {event.error}]")
    return s.dim("[nothing to compact: the conversation is short enough]")


class OutputGone(BaseException):
    """The reader of the command's output went away (``| head``). A BaseException, as
    ``KeyboardInterrupt`` is: it aborts the run and reaches ``main``, which stops quietly."""


class EventPrinter:
    """Writes a run as it happens: streamed text, injected user messages, tool calls.

    ``tool_times`` maps each finished tool call id to (name, seconds it ran), measured on
    Trio's clock between its ``tool_execution_start`` and ``tool_execution_end``.
    """

    def __init__(self, out: TextIO | None = None, style: Style | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.style = style if style is not None else Style(wants_color(self.out))
        self.tool_times: dict[str, tuple[str, float]] = {}
        self._started: dict[str, float] = {}
        self._at_line_start = True
        self.show_user_messages = True

    def write(self, text: str) -> None:
        if text:
            try:
                self.out.write(text)
                self.out.flush()
            except BrokenPipeError:
                raise OutputGone from None  # ends the command quietly, the run aborted
            self._at_line_start = text.endswith("\n")

    def typed_newline(self) -> None:
        """The user pressed Enter in the terminal: the cursor is at a line start already."""
        self._at_line_start = True

    def end_line(self) -> None:
        """Finish the current line, if anything has been written on it."""
        if not self._at_line_start:
            self.write("\n")

    def line(self, text: str = "") -> None:
        """Write ``text`` on a line of its own."""
        if not self._at_line_start:
            self.write("\n")
        self.write(text + "\n")

    def __call__(self, event: AgentEvent) -> None:
        s = self.style
        match event:
            case MessageStart(message=UserMessage() as message) if self.show_user_messages:
                self.line(s.magenta(f"> {text_of(message)}"))
            case MessageStart(message=AssistantMessage()):
                if not self._at_line_start:
                    self.write("\n")
                self.write(s.bold("assistant: "))
            case MessageUpdate(assistant_message_event=TextDelta(delta=delta)):
                self.write(delta)
            case MessageUpdate(assistant_message_event=ThinkingDelta(delta=delta)):
                self.write(s.dim(delta))
            case MessageEnd(message=AssistantMessage() as message):
                if message.stop_reason == "aborted":
                    self.line(s.yellow(f"[aborted: {message.error_message or 'no reason'}]"))
                elif message.stop_reason == "error":
                    self.line(s.red(f"[error: {message.error_message or 'unknown'}]"))
                else:
                    self.end_line()
            case ToolExecutionStart(tool_call_id=call_id, tool_name=name, args=args):
                self._started[call_id] = trio.current_time()
                self.line(s.cyan(f"  -> {name}({short(args, 50)})"))
            case ToolExecutionEnd(tool_call_id=call_id, tool_name=name, result=result):
                started = self._started.pop(call_id, trio.current_time())
                seconds = trio.current_time() - started
                self.tool_times[call_id] = (name, seconds)
                preview = short(text_of(result), 60)
                mark = s.red("error") if event.is_error else s.green("ok")
                self.line(f"  <- {name} {mark} {s.dim(f'{seconds:.2f}s')} {preview}")
            case CompactionStart(reason=reason):
                self.line(s.dim(f"[compacting the conversation ({reason})...]"))
            case CompactionEnd():
                self.line(compaction_line(event, s))
            case _:
                pass
