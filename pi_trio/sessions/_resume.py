"""Resuming a session: its interrupted tail repaired, its waiting tool calls restored.

A tool call without a result in the log gets one (:func:`repair_tail`): its logged
``tool_result`` when the write-back was lost, a re-run for a ``replay="safe"`` tool whose intent
was logged, else an error result saying "not_started" or "outcome_unknown". A call that waits
for a person's decision (an ``approval`` entry, no result) is left alone: it still waits, with
the decisions logged for it (:func:`restore_approvals`), and the run it ended is not closed in
the aborted shape (it had ended waiting).
"""

from __future__ import annotations

from typing import Any

from ..agent import AgentState
from ..events import ToolExecutionEnd, ToolResult
from ..messages import AgentMessage, AssistantMessage, ToolResultMessage
from ..tools import AgentTool, as_tool_result, error_result, exception_text
from ._recorder import SessionRecorder
from ._repair import (
    SessionImage,
    fill,
    find_gaps,
    interrupted_result,
    logged_result,
    needs_closing,
    stopped_message,
    waiting_calls,
)

__all__ = ["repair_tail", "restore_approvals"]


def restore_approvals(image: SessionImage, state: AgentState) -> None:
    """Give ``state`` (its transcript repaired already) the calls that still wait for a
    decision, and the decisions logged for them."""
    waiting = waiting_calls(image, state.messages)
    if waiting:
        state.restore_approvals(waiting, image.decisions)


async def repair_tail(
    image: SessionImage, state: AgentState, recorder: SessionRecorder
) -> list[AgentMessage]:
    """Fill the log's missing tool results and close an open run; log what was added."""
    messages = image.messages
    tools = {tool.name: tool for tool in state.tools}
    fills: list[tuple[int, AgentMessage]] = []
    waiting = {call.id for call in waiting_calls(image, messages)}
    for gap in find_gaps(messages):
        call = gap.call
        if call.id in waiting:  # it waits for a person's decision: no result yet
            continue
        logged = image.results.get(call.id)
        if logged is not None:
            result: AgentMessage = logged_result(image.session_id, *logged)
        elif call.id in image.intents:
            tool = tools.get(call.name)
            if tool is not None and tool.replay == "safe":
                result = await _replay(tool, call.id, call.name, call.arguments, recorder)
            else:
                result = interrupted_result(call, "outcome_unknown")
        else:
            result = interrupted_result(call, "not_started")
        fills.append((gap.index, result))
    repaired = fill(messages, fills) if fills else list(messages)
    if fills:
        if all(index == len(messages) for index, _ in fills):
            for _, message in sorted(fills, key=lambda item: item[0]):
                recorder.note_message(message)
        else:
            recorder.note_transcript(repaired)
    if image.open_run:
        reason = "aborted"
        if waiting:  # the run had ended waiting for decisions (its run_end was not logged)
            reason = "toolUse"
        elif needs_closing(repaired):
            closing = stopped_message(state.model, repaired)
            repaired.append(closing)
            recorder.note_message(closing)
        elif repaired and isinstance(repaired[-1], AssistantMessage):
            reason = repaired[-1].stop_reason
        recorder.note("run_end", {"reason": reason, "repaired": True})
    return repaired


async def _replay(
    tool: AgentTool, call_id: str, name: str, arguments: dict[str, Any], recorder: SessionRecorder
) -> ToolResultMessage:
    """Re-run an interrupted replay="safe" call; its result is durable when this returns."""

    async def ignore_update(partial: ToolResult) -> None:
        pass

    try:
        raw = arguments
        if tool.prepare_arguments is not None:
            raw = tool.prepare_arguments(raw)
        value = await tool.run(call_id, tool.validate(raw), ignore_update)
        result = as_tool_result(value)  # checked as the loop checks it
        is_error = bool(result.is_error)  # a failure reported without raising
    except Exception as exc:
        result, is_error = error_result(exception_text(exc)), True
    recorder.note("tool_result", ToolExecutionEnd(call_id, name, result, is_error))
    await recorder.flush()
    return ToolResultMessage(call_id, name, result.content, result.details, is_error)
