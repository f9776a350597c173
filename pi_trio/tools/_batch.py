"""One assistant message's tool calls: prepared in order, executed, written back in order.

The batch keeps pi's three phases. *Prepare* runs in source order in the loop's task
(``tool_execution_start``, lookup, ``prepare_arguments``, validation, the approval gate of
:mod:`._approval`, ``before_tool_call``); calls that cannot run (unknown tool, invalid
arguments, denied, blocked, a hook that raised) get their error result at once, and a call
waiting for a decision gets a ``tool_approval_request`` and no result in this run.
*Execute + finalize* (the tool, then ``after_tool_call``) runs for all prepared calls
concurrently in one nursery owned by the batch, or one by one in sequential mode;
``tool_execution_end`` goes out in completion order. *Write-back* hands the tool-result
messages to the run in source order (``announce``), passing over waiting calls.

Each call has one :class:`_Slot` that says how far it got; a slot is updated before the event
about it is sent, so when the run is cancelled :meth:`ToolBatch.close_out` knows exactly which
calls still need a result, a start or an end event.

A tool that raises ``KeyboardInterrupt`` (or another ``BaseException`` that is not a
cancellation) ends the batch with that exception, plain, never inside an exception group.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from logging import WARNING
from typing import Any

import attrs
import trio

from .._callbacks import exception_text
from .._groups import must_propagate, plain_exception
from .._logging import log_failure, tools_logger
from .._telemetry import end_tool, start_tool
from ..events import (
    AgentEvent,
    ToolApprovalRequest,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResult,
)
from ..messages import AssistantMessage, ToolCall, ToolResultMessage, Usage, now_ms
from ._agent_tool import AgentTool
from ._approval import ToolDecision, denied_result, needs_approval
from ._hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from ._results import (
    after_hook,
    as_tool_result,
    before_hook,
    counted_usage,
    error_result,
    log_prepare_failure,
    steered_result,
    timed_out_result,
)
from ._serial import Emit, OneAtATime

__all__ = [
    "ABORTED_TOOL_TEXT",
    "AfterToolCall",
    "Announce",
    "BeforeToolCall",
    "Emit",
    "ToolBatch",
    "error_result",
    "exception_text",
]

ABORTED_TOOL_TEXT = "Tool execution was aborted"

Announce = Callable[[ToolResultMessage], Awaitable[None]]
BeforeToolCall = Callable[
    [BeforeToolCallContext], Awaitable[BeforeToolCallResult | None] | BeforeToolCallResult | None
]
AfterToolCall = Callable[
    [AfterToolCallContext], Awaitable[AfterToolCallResult | None] | AfterToolCallResult | None
]


@attrs.define(slots=True)
class _Slot:
    """One tool call and how far it got (each flag set before its event is sent)."""

    index: int
    call: ToolCall
    started: bool = False
    result: ToolResult | None = None
    is_error: bool = False
    ended: bool = False
    written: bool = False
    tool: AgentTool | None = None
    args: Any = None
    started_at: float | None = None  # the run's clock when execution began
    error: BaseException | None = None  # the exception its error result comes from
    ended_ms: int | None = None  # wall clock (ms) when its end was applied: the message's time
    scope: trio.CancelScope | None = None  # while it executes, under "at_tool_boundary"
    end: ToolExecutionEnd | None = None  # its end event, built (the close-out sends it if unsent)
    waiting: bool = False  # it waits for a person's decision: no result, no end in this run
    spent: Usage | None = None  # the last usage its updates reported (see counted_usage)

    def mark_ended(self) -> None:
        self.ended = True
        self.ended_ms = now_ms()


class ToolBatch:
    """The tool calls of one assistant message and how far each has got.

    Args:
        assistant: the message whose calls these are.
        calls: its tool calls, in source order.
        context: what the hooks are given.
        tools: the tools by name.
        emit: applies and sends one event (the loop's; see :data:`Emit`).
        announce: hands a tool-result message to the run, which sends its start and end.
        sequential: run the calls one by one (also when any called tool asks for it).
        max_parallel: at most this many calls execute at once (None: all); the others wait
            and start in source order.
        tool_timeout: the time limit of a call whose tool sets none (None: no limit).
        steering: ``steering_policy="at_tool_boundary"``: called when the batch starts, it
            returns a ``trio.Event`` set when a steering message is queued after that; the
            calls not finished by then are stopped (None: pi's "after_batch").
        decisions: the decisions about calls that waited for approval (a run continuing
            them); a call of a tool with ``requires_approval`` and no decision waits (see
            :mod:`._approval`): it gets a ``tool_approval_request`` and no result.
    """

    def __init__(
        self,
        assistant: AssistantMessage,
        calls: list[ToolCall],
        context: AgentContext,
        tools: Mapping[str, AgentTool],
        emit: Emit,
        announce: Announce,
        *,
        sequential: bool,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        max_parallel: int | None = None,
        tool_timeout: float | None = None,
        steering: Callable[[], trio.Event] | None = None,
        decisions: Mapping[str, ToolDecision] | None = None,
    ) -> None:
        self.assistant = assistant
        self.calls = calls
        self._context = context
        self._tools = tools
        self._emit = emit
        self._serializer: OneAtATime | None = None
        self._announce = announce
        self._before = before_tool_call
        self._after = after_tool_call
        self._max_parallel = max_parallel
        self._tool_timeout = tool_timeout
        self._steering = steering
        self._arrival: trio.Event | None = None  # set when a steer came: unfinished calls stop
        self._decisions = decisions or None
        self._write_next = 0  # the index of the next slot to write back
        self.any_waiting = False
        """Whether a call waits for a decision (the run then ends after this batch)."""
        slots: list[_Slot] = []
        for call in calls:  # loops, not generator expressions: this runs once per turn
            if not sequential:
                tool = tools.get(call.name)
                sequential = tool is not None and tool.execution_mode == "sequential"
            slots.append(_Slot(len(slots), call))
        self.sequential = sequential
        self._slots = slots
        self.messages: list[ToolResultMessage] = []
        self._now = trio.lowlevel.current_clock().current_time  # trio.current_time, looked up once

    @property
    def terminate(self) -> bool:
        """True when every call's result asked to stop the run (pi's rule)."""
        for slot in self._slots:
            if slot.result is None or not slot.result.terminate:
                return False
        return bool(self._slots)

    @property
    def waiting(self) -> tuple[ToolCall, ...]:
        """The calls that wait for a person's decision (no result in this run)."""
        return tuple(slot.call for slot in self._slots if slot.waiting)

    async def run(self, refuse_with: str | None = None) -> None:
        """Run the batch to the end. ``refuse_with``: execute nothing, every call gets that
        error text (for tool calls cut off at the output token limit).

        On cancellation the slots say how far each call got; see :meth:`close_out`.
        """
        if self._steering is None or refuse_with is not None:
            await self._run_calls(refuse_with)
            return
        arrival = self._steering()  # armed before any call can run
        if not isinstance(arrival, trio.Event):
            raise TypeError(f"steering_signal must return a trio.Event, got {arrival!r}")
        self._arrival = arrival
        try:  # "at_tool_boundary": a watcher beside the calls, for as long as they run
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_steering, arrival)
                await self._run_calls(None)
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise plain_exception(group, tools_logger) from None

    async def _watch_steering(self, arrival: trio.Event) -> None:
        await arrival.wait()
        for slot in self._slots:
            if slot.scope is not None:
                slot.scope.cancel(reason="a steering message was queued")

    async def _run_calls(self, refuse_with: str | None) -> None:
        if self.sequential or refuse_with is not None:
            for slot in self._slots:
                if await self._prepare(slot, refuse_with):
                    await self._execute_and_end(slot)
                elif not slot.waiting:
                    await self._end(slot)
                await self._write_back()
            return
        prepared: list[_Slot] = []
        for slot in self._slots:
            if await self._prepare(slot, None):
                prepared.append(slot)
            elif not slot.waiting:
                await self._end(slot)
        if len(prepared) == 1:
            await self._execute_and_end(prepared[0])  # a nursery of one is just overhead
        elif prepared:
            self._serializer = OneAtATime(self._emit)  # one event at a time into the sink
            try:
                async with trio.open_nursery() as nursery:
                    if self._max_parallel is None or self._max_parallel >= len(prepared):
                        for slot in prepared:
                            nursery.start_soon(self._execute_and_end, slot)
                    else:  # bounded: started one by one, in source order, as places free up
                        places = trio.Semaphore(self._max_parallel)
                        for slot in prepared:
                            await places.acquire()
                            nursery.start_soon(self._execute_and_release, slot, places)
            except BaseExceptionGroup as group:
                # the tasks catch every Exception: what is left is a cancellation, or a
                # KeyboardInterrupt (SystemExit ...) from a tool, which must come out plain
                raise plain_exception(group, tools_logger) from None
        await self._write_back()

    def close_out(
        self, text: str = ABORTED_TOOL_TEXT
    ) -> tuple[list[AgentEvent], list[ToolResultMessage]]:
        """Give every call without a result an error result (``text``); a call waiting for
        a decision too (an abort withdraws its approval request).

        Synchronous. Returns the tool events still to send (a start never sent, the ends) and
        the result messages not yet handed to the run, in source order; the caller takes the
        messages into its transcript.
        """
        events: list[AgentEvent] = []
        append = events.append
        messages: list[ToolResultMessage] = []
        ended_ms: int | None = None  # one clock reading for every call ended here
        for slot in self._slots:
            call = slot.call
            if slot.result is None:
                slot.result, slot.is_error = counted_usage(error_result(text), slot.spent), True
                if not slot.started:
                    slot.started = True
                    append(ToolExecutionStart(call.id, call.name, call.arguments))
            if not slot.ended:
                slot.ended = True
                if ended_ms is None:
                    ended_ms = now_ms()
                slot.ended_ms = ended_ms
                end = slot.end  # built but never applied (its task was cancelled first)
                if end is None:
                    end = ToolExecutionEnd(call.id, call.name, slot.result, slot.is_error)
                append(end)
        for slot in self._slots:
            if not slot.written:
                messages.append(self._message(slot))
        return events, messages

    # --- phases ------------------------------------------------------------------------------

    async def _prepare(self, slot: _Slot, refuse_with: str | None) -> bool:
        """Start and prepare one call; True when it is ready to execute, else it has its
        (error) result."""
        call = slot.call
        slot.started = True
        pending = self._emit(ToolExecutionStart(call.id, call.name, call.arguments))
        if pending is not None:
            await pending
        if refuse_with is not None:
            slot.result, slot.is_error = error_result(refuse_with), True
            return False
        if self._arrival is not None and self._arrival.is_set():
            slot.result, slot.is_error = steered_result(call.name, started=False), True
            return False
        tool = self._tools.get(call.name)
        if tool is None:
            slot.result, slot.is_error = error_result(f"Tool {call.name} not found"), True
            return False
        try:
            arguments = call.arguments
            if tool.prepare_arguments is not None:
                arguments = tool.prepare_arguments(arguments)
            args = tool.validate(arguments)
            if (self._decisions is not None or tool.requires_approval is not False) and (
                await self._decided_against(slot, tool, args)
            ):
                return False
            if self._before is not None:
                context = BeforeToolCallContext(self.assistant, call, args, self._context)
                decision = await before_hook(self._before, context)
                if decision is not None and decision.block:
                    reason = decision.reason or "Tool execution was blocked"
                    slot.result, slot.is_error = error_result(reason), True
                    slot.result.terminate = bool(decision.terminate)
                    return False
        except Exception as exc:
            text = exception_text(exc)
            slot.result, slot.is_error, slot.error = error_result(text), True, exc
            log_prepare_failure(call, exc, text)
            return False
        slot.tool, slot.args = tool, args
        return True

    async def _decided_against(self, slot: _Slot, tool: AgentTool, args: Any) -> bool:
        """The approval gate: True when the call does not run now, denied (its error result
        set) or waiting for a decision (its ``tool_approval_request`` sent)."""
        call = slot.call
        decision = self._decisions.get(call.id) if self._decisions is not None else None
        if decision is not None:
            if decision.approved:
                return False
            slot.result, slot.is_error = denied_result(call.name, decision.reason), True
            return True
        context = BeforeToolCallContext(self.assistant, call, args, self._context)
        if not await needs_approval(tool, context):
            return False
        slot.waiting = self.any_waiting = True
        pending = self._emit(ToolApprovalRequest(call.id, call.name, call.arguments))
        if pending is not None:
            await pending
        return True

    async def _execute_and_release(self, slot: _Slot, places: trio.Semaphore) -> None:
        try:
            await self._execute_and_end(slot)
        finally:
            places.release()

    async def _execute_and_end(self, slot: _Slot) -> None:
        tool = slot.tool
        assert tool is not None
        call = slot.call
        emit = self._emit if self._serializer is None else self._serializer.emit

        async def on_update(partial: ToolResult) -> None:
            if partial.usage is not None:
                slot.spent = partial.usage
            pending = emit(ToolExecutionUpdate(call.id, call.name, call.arguments, partial))
            if pending is not None:
                await pending

        if self._arrival is not None and self._arrival.is_set():  # steered while it waited
            slot.result, slot.is_error = steered_result(call.name, started=False), True
            return await self._end(slot)
        started = start_tool(call, tool.description)  # None unless OpenTelemetry is on
        timeout = tool.timeout if tool.timeout is not None else self._tool_timeout
        slot.started_at = self._now()
        try:
            if self._steering is not None:
                value = await self._run_steerable(slot, tool, timeout, on_update)
            elif timeout is None:
                value = await tool.run(call.id, slot.args, on_update)
            else:
                with trio.move_on_after(timeout) as limit:
                    value = await tool.run(call.id, slot.args, on_update)
                if limit.cancelled_caught:
                    value = timed_out_result(tool, timeout)
                    tools_logger.info(
                        "tool %s (call %s) timed out after %g s", call.name, call.id, timeout
                    )
            result = as_tool_result(value)
            is_error = bool(result.is_error)
        except trio.Cancelled:
            # the usual way out of an abort: no checks, and no second handler (an outer
            # try/finally) for the Cancelled to pass through on its way
            if started is not None:
                end_tool(started, slot.result, slot.is_error, slot.error)
            raise
        except BaseException as exc:  # one failing tool never takes the batch down
            if must_propagate(exc):
                if started is not None:
                    end_tool(started, slot.result, slot.is_error, slot.error)
                raise
            text = exception_text(exc)
            result, is_error, slot.error = error_result(text), True, exc
            log_failure(
                tools_logger, WARNING, exc, "tool %s (call %s) raised; the model sees: %s",
                call.name, call.id, text,
            )  # fmt: skip
        result = counted_usage(result, slot.spent)
        try:
            if self._after is not None:
                result, is_error = await self._after_tool_call(slot, result, is_error)
            slot.result, slot.is_error = result, is_error
            await self._end(slot)
        finally:
            if started is not None:
                end_tool(started, slot.result, slot.is_error, slot.error)

    async def _run_steerable(
        self, slot: _Slot, tool: AgentTool, limit_s: float | None, on_update: Any
    ) -> Any:
        """Execute under a cancel scope the steering watcher can cancel. A call that
        finished before the cancellation reached it keeps its own result."""
        value: Any = None
        with trio.CancelScope() as scope:
            slot.scope = scope
            with trio.move_on_after(math.inf if limit_s is None else limit_s) as limit:
                value = await tool.run(slot.call.id, slot.args, on_update)
        slot.scope = None
        if scope.cancelled_caught:
            return steered_result(tool.name, started=True, abandoned=not tool.is_async)
        if limit.cancelled_caught:
            assert limit_s is not None
            tools_logger.info(
                "tool %s (call %s) timed out after %g s", tool.name, slot.call.id, limit_s
            )
            return timed_out_result(tool, limit_s)
        return value

    async def _after_tool_call(
        self, slot: _Slot, result: ToolResult, is_error: bool
    ) -> tuple[ToolResult, bool]:
        assert self._after is not None
        context = AfterToolCallContext(
            self.assistant, slot.call, slot.args, result, is_error, self._context
        )
        result, is_error, failure = await after_hook(self._after, context)
        if failure is not None:
            slot.error = failure
        return result, is_error

    async def _end(self, slot: _Slot) -> None:
        call = slot.call
        assert slot.result is not None
        event = ToolExecutionEnd(call.id, call.name, slot.result, slot.is_error)
        if slot.started_at is not None:
            event.duration_ms = round((self._now() - slot.started_at) * 1000.0)
        if slot.error is not None:
            event.error = slot.error
        slot.end = event
        serializer = self._serializer
        if serializer is None:
            slot.mark_ended()
            pending = self._emit(event)
        else:
            pending = serializer.emit(event, slot.mark_ended)
        if pending is not None:
            await pending

    async def _write_back(self) -> None:
        """Hand the finished results to the run in source order, as far as they go (a call
        waiting for a decision is passed over: its result comes in a later run)."""
        slots = self._slots
        while self._write_next < len(slots):
            slot = slots[self._write_next]
            if not slot.waiting:
                if slot.result is None:
                    return
                await self._announce(self._message(slot))
            self._write_next += 1

    def _message(self, slot: _Slot) -> ToolResultMessage:
        """The slot's result message, recorded as written (before anyone announces it)."""
        assert slot.result is not None
        slot.written = True
        message = ToolResultMessage(
            tool_call_id=slot.call.id,
            tool_name=slot.call.name,
            content=slot.result.content,
            details=slot.result.details,
            is_error=slot.is_error,
            usage=slot.result.usage,
            # the time its tool_execution_end was applied (a session log's tool_result entry
            # has the same time, so the message can be rebuilt from it exactly)
            timestamp=slot.ended_ms if slot.ended_ms is not None else now_ms(),
        )
        self.messages.append(message)
        return message
