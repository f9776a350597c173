"""One assistant message's tool calls: prepared in order, executed, written back in order.

The batch keeps pi's three phases. *Prepare* runs in source order in the loop's task
(``tool_execution_start``, lookup, ``prepare_arguments``, validation, ``before_tool_call``);
calls that cannot run (unknown tool, invalid arguments, blocked, a hook that raised) get their
error result at once. *Execute + finalize* (the tool, then ``after_tool_call``) runs for all
prepared calls concurrently in one nursery owned by the batch, or one by one in sequential
mode; ``tool_execution_end`` goes out in completion order. *Write-back* appends the tool-result
messages to the transcript in source order.

Every result is recorded before its event is sent, so when the run is cancelled the batch can
say exactly which calls still need a result (:meth:`ToolBatch.close_out`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import attrs
import trio

from .._groups import only_cancelled
from ..events import (
    AgentEvent,
    MessageEnd,
    MessageStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResult,
)
from ..messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, now_ms
from ._agent_tool import AgentTool
from ._hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    BeforeToolCallContext,
    BeforeToolCallResult,
)

__all__ = [
    "ABORTED_TOOL_TEXT",
    "AfterToolCall",
    "BeforeToolCall",
    "Emit",
    "ToolBatch",
    "error_result",
    "exception_text",
]

T = TypeVar("T")

ABORTED_TOOL_TEXT = "Tool execution was aborted"

Emit = Callable[[AgentEvent], Awaitable[None]]
BeforeToolCall = Callable[
    [BeforeToolCallContext], "Awaitable[BeforeToolCallResult | None] | BeforeToolCallResult | None"
]
AfterToolCall = Callable[
    [AfterToolCallContext], "Awaitable[AfterToolCallResult | None] | AfterToolCallResult | None"
]


def exception_text(exc: BaseException) -> str:
    """What the model (or the transcript) is told about an exception."""
    return str(exc) or type(exc).__name__


def error_result(text: str) -> ToolResult:
    return ToolResult([TextContent(text)], details={})


async def _call_hook(hook: Callable[..., Any], *args: Any) -> Any:
    value = hook(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


def _serialized(emit: Emit) -> Emit:
    """``emit`` for concurrent tool tasks: a listener that awaits (a socket write, say) must
    not be entered by a second task while it is suspended. No schedule point when free."""
    busy = False
    waiting = trio.lowlevel.ParkingLot()

    async def emit_one_at_a_time(event: AgentEvent) -> None:
        nonlocal busy
        while busy:
            await waiting.park()
        busy = True
        try:
            await emit(event)
        finally:
            busy = False
            waiting.unpark()

    return emit_one_at_a_time


def _as_tool_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult([TextContent(value)])
    raise TypeError(f"tool returned {type(value).__name__}, expected pt.ToolResult or str")


@attrs.define
class _Finalized:
    tool_call: ToolCall
    result: ToolResult
    is_error: bool


@attrs.define
class _Prepared:
    index: int
    tool_call: ToolCall
    tool: AgentTool
    args: Any


class ToolBatch:
    """The tool calls of one assistant message and how far each has got."""

    def __init__(
        self,
        assistant: AssistantMessage,
        calls: list[ToolCall],
        context: AgentContext,
        tools: Mapping[str, AgentTool],
        emit: Emit,
        append_message: Callable[[ToolResultMessage], None],
        *,
        sequential: bool,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
    ) -> None:
        self.assistant = assistant
        self.calls = calls
        self._context = context
        self._tools = tools
        self._emit = emit
        self._append_message = append_message
        self._before = before_tool_call
        self._after = after_tool_call
        count = len(self.calls)
        self.sequential = sequential or any(
            (tool := tools.get(call.name)) is not None and tool.execution_mode == "sequential"
            for call in self.calls
        )
        self._started = [False] * count
        self._ended = [False] * count
        self._results: list[_Finalized | None] = [None] * count
        self.messages: list[ToolResultMessage] = []

    @property
    def terminate(self) -> bool:
        """True when every call's result asked to stop the run (pi's rule)."""
        return bool(self._results) and all(
            done is not None and done.result.terminate for done in self._results
        )

    async def run(self, refuse_with: str | None = None) -> None:
        """Run the batch to the end. ``refuse_with``: execute nothing, every call gets that
        error text (for tool calls cut off at the output token limit)."""
        if self.sequential or refuse_with is not None:
            for index, call in enumerate(self.calls):
                outcome = await self._start_and_prepare(index, call, refuse_with)
                if isinstance(outcome, _Prepared):
                    await self._execute_and_end(outcome)
                else:
                    await self._end(index, outcome)
                await self._write_back()
            return
        prepared: list[_Prepared] = []
        for index, call in enumerate(self.calls):
            outcome = await self._start_and_prepare(index, call, None)
            if isinstance(outcome, _Prepared):
                prepared.append(outcome)
            else:
                await self._end(index, outcome)
        if len(prepared) == 1:
            await self._execute_and_end(prepared[0])  # a nursery of one is just overhead
        elif prepared:
            self._emit = _serialized(self._emit)  # one event at a time into the sink
            try:
                async with trio.open_nursery() as nursery:
                    for item in prepared:
                        nursery.start_soon(self._execute_and_end, item)
            except BaseExceptionGroup as group:
                # the tasks catch every Exception: what is left is a cancellation
                cancelled = only_cancelled(group)
                if cancelled is None:
                    raise
                raise cancelled from None
        await self._write_back()

    def close_out(self, text: str = ABORTED_TOOL_TEXT) -> list[AgentEvent]:
        """Give every call without a result an error result and write back what is missing.

        Synchronous: the transcript is complete when this returns; the returned events (start
        events never sent, end events, result messages) are for delivery afterwards.
        """
        events: list[AgentEvent] = []
        for index, call in enumerate(self.calls):
            if self._results[index] is None:
                self._results[index] = _Finalized(call, error_result(text), True)
                if not self._started[index]:
                    self._started[index] = True
                    events.append(ToolExecutionStart(call.id, call.name, call.arguments))
            if not self._ended[index]:
                self._ended[index] = True
                done = self._results[index]
                assert done is not None
                events.append(ToolExecutionEnd(call.id, call.name, done.result, done.is_error))
        while len(self.messages) < len(self.calls):
            message = self._next_message()
            events.append(MessageStart(message))
            events.append(MessageEnd(message))
        return events

    # --- phases ------------------------------------------------------------------------------

    async def _start_and_prepare(
        self, index: int, call: ToolCall, refuse_with: str | None
    ) -> _Prepared | _Finalized:
        self._started[index] = True
        await self._emit(ToolExecutionStart(call.id, call.name, call.arguments))
        if refuse_with is not None:
            return _Finalized(call, error_result(refuse_with), True)
        tool = self._tools.get(call.name)
        if tool is None:
            return _Finalized(call, error_result(f"Tool {call.name} not found"), True)
        try:
            arguments = call.arguments
            if tool.prepare_arguments is not None:
                arguments = tool.prepare_arguments(arguments)
            args = tool.validate(arguments)
            if self._before is not None:
                decision = await _call_hook(
                    self._before, BeforeToolCallContext(self.assistant, call, args, self._context)
                )
                if decision is not None and decision.block:
                    reason = decision.reason or "Tool execution was blocked"
                    return _Finalized(call, error_result(reason), True)
        except Exception as exc:
            return _Finalized(call, error_result(exception_text(exc)), True)
        return _Prepared(index, call, tool, args)

    async def _execute_and_end(self, prepared: _Prepared) -> None:
        call = prepared.tool_call
        emit = self._emit

        async def on_update(partial: ToolResult) -> None:
            await emit(ToolExecutionUpdate(call.id, call.name, call.arguments, partial))

        try:
            result = _as_tool_result(await prepared.tool.run(call.id, prepared.args, on_update))
            is_error = False
        except Exception as exc:
            result, is_error = error_result(exception_text(exc)), True
        if self._after is not None:
            result, is_error = await self._after_tool_call(prepared, result, is_error)
        await self._end(prepared.index, _Finalized(call, result, is_error))

    async def _after_tool_call(
        self, prepared: _Prepared, result: ToolResult, is_error: bool
    ) -> tuple[ToolResult, bool]:
        assert self._after is not None
        context = AfterToolCallContext(
            self.assistant, prepared.tool_call, prepared.args, result, is_error, self._context
        )
        try:
            override = await _call_hook(self._after, context)
        except Exception as exc:
            return error_result(exception_text(exc)), True
        if override is None:
            return result, is_error
        merged = ToolResult(
            content=result.content if override.content is None else override.content,
            details=result.details if override.details is None else override.details,
            terminate=result.terminate if override.terminate is None else override.terminate,
        )
        return merged, is_error if override.is_error is None else override.is_error

    async def _end(self, index: int, done: _Finalized) -> None:
        self._results[index] = done
        self._ended[index] = True
        call = done.tool_call
        await self._emit(ToolExecutionEnd(call.id, call.name, done.result, done.is_error))

    async def _write_back(self) -> None:
        while (
            len(self.messages) < len(self.calls) and self._results[len(self.messages)] is not None
        ):
            message = self._next_message()
            await self._emit(MessageStart(message))
            await self._emit(MessageEnd(message))

    def _next_message(self) -> ToolResultMessage:
        done = self._results[len(self.messages)]
        assert done is not None
        message = ToolResultMessage(
            tool_call_id=done.tool_call.id,
            tool_name=done.tool_call.name,
            content=done.result.content,
            details=done.result.details,
            is_error=done.is_error,
            timestamp=now_ms(),
        )
        self.messages.append(message)
        self._append_message(message)
        return message
