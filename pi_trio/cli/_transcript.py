"""Checking that a transcript is valid: what the demo shows after an abort."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import AgentMessage, AssistantMessage, ToolResultMessage, UserMessage
from ..wire import from_json, to_json

__all__ = ["transcript_problems"]


def transcript_problems(messages: Sequence[AgentMessage]) -> list[str]:
    """What is wrong with ``messages`` as a transcript a model can be sent (empty: nothing).

    Every tool call of a completed assistant message has exactly one result, after it and
    before the next assistant or user message; no result answers an unknown call; and the
    transcript survives a round trip through pi's JSON unchanged.
    """
    problems: list[str] = []
    open_calls: dict[str, str] = {}
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage | UserMessage) and open_calls:
            problems.append(f"message {index}: tool calls without results: {sorted(open_calls)}")
            open_calls.clear()
        if isinstance(message, AssistantMessage) and message.stop_reason not in (
            "error",
            "aborted",
        ):
            for call in message.tool_calls:
                if call.id in open_calls:
                    problems.append(f"message {index}: duplicate tool call id {call.id}")
                open_calls[call.id] = call.name
        elif (
            isinstance(message, ToolResultMessage)
            and open_calls.pop(message.tool_call_id, None) is None
        ):
            problems.append(f"message {index}: result for unknown call {message.tool_call_id}")
    if open_calls:
        problems.append(f"tool calls without results at the end: {sorted(open_calls)}")
    data = [to_json(m) for m in messages]
    again = [to_json(from_json(item, AgentMessage)) for item in data]
    if again != data:
        problems.append("the transcript changes on a round trip through pi's JSON")
    return problems
