"""The tool calls a continue run picks up: those that waited for a person's decision."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import AgentMessage, AssistantMessage, ToolCall, ToolResultMessage

__all__ = ["unanswered_calls"]


def unanswered_calls(
    messages: Sequence[AgentMessage],
) -> tuple[AssistantMessage, list[ToolCall]] | None:
    """The transcript's last assistant message and those of its tool calls that no result
    message after it answers, when it is followed by tool results only (its batch is still
    open: calls waiting for a decision); None otherwise."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
            continue
        if not isinstance(message, AssistantMessage) or message.stop_reason in (
            "error",
            "aborted",
        ):
            return None
        calls = [call for call in message.tool_calls if call.id not in answered]
        return (message, calls) if calls else None
    return None
