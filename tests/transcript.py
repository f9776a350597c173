"""The transcript invariants every run must leave behind, aborted or not."""

from __future__ import annotations

from collections.abc import Sequence

import pi_trio as pt


def assert_transcript_valid(messages: Sequence[pt.AgentMessage], *, aborted: bool = False) -> None:
    """Every tool call of a completed assistant message has exactly one result after it and
    before the next assistant message; no orphan results; an aborted/errored assistant message
    needs none. With ``aborted``, the transcript ends with an assistant message whose stop
    reason is "aborted" (or "stop" when the run finished first)."""
    open_calls: dict[str, str] = {}
    for index, message in enumerate(messages):
        if isinstance(message, pt.AssistantMessage):
            assert not open_calls, f"message {index}: tool calls without results: {open_calls}"
            if message.stop_reason not in ("error", "aborted"):
                for call in message.tool_calls:
                    assert call.id not in open_calls, f"duplicate tool call id {call.id}"
                    open_calls[call.id] = call.name
        elif isinstance(message, pt.ToolResultMessage):
            assert message.tool_call_id in open_calls, (
                f"message {index}: result for unknown or already answered call "
                f"{message.tool_call_id}"
            )
            del open_calls[message.tool_call_id]
        elif isinstance(message, pt.UserMessage):
            assert not open_calls, f"message {index}: user message before tool results"
    assert not open_calls, f"tool calls without results at the end: {open_calls}"
    if aborted:
        last = messages[-1]
        assert isinstance(last, pt.AssistantMessage), f"last message is {last.role}"
        assert last.stop_reason in ("aborted", "stop"), last.stop_reason
