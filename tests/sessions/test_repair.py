"""``pt.repair_transcript``: every tool call gets a result, nothing is removed."""

from __future__ import annotations

from typing import Any

import pi_trio as pt
from pi_trio.sessions import OUTCOME_UNKNOWN_TEXT, PROCESS_STOPPED_TEXT
from pi_trio.testing import check_transcript

USAGE = {
    "input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}  # fmt: skip


def assistant(calls: list[tuple[str, str]], stop: str = "toolUse") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": "working"}]
        + [{"type": "toolCall", "id": i, "name": n, "arguments": {"x": 1}} for i, n in calls],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": USAGE, "stopReason": stop, "timestamp": 1,
    }  # fmt: skip


def result(call_id: str, name: str) -> dict[str, Any]:
    return {
        "role": "toolResult", "toolCallId": call_id, "toolName": name,
        "content": [{"type": "text", "text": "done"}], "isError": False, "timestamp": 2,
    }  # fmt: skip


# A pi JSON transcript where a crash left two orphaned tool calls (pi#9306): "b" of the first
# batch never got its result, and the last batch has none at all.
PI_TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "user", "content": "refund order 7", "timestamp": 0},
    assistant([("a", "lookup"), ("b", "refund")]),
    result("a", "lookup"),
    {"role": "user", "content": "and order 8?", "timestamp": 3},
    assistant([("c", "refund")]),
]


def load(items: list[dict[str, Any]]) -> list[pt.AgentMessage]:
    return [pt.from_json(item, pt.AgentMessage) for item in items]  # type: ignore[arg-type]


def test_orphaned_calls_get_error_results_in_place_and_nothing_is_removed() -> None:
    messages = load(PI_TRANSCRIPT)
    repaired = pt.repair_transcript(messages)
    assert [m for m in repaired if not getattr(m, "details", None)] == messages  # all kept
    roles = [(m.role, getattr(m, "tool_call_id", None)) for m in repaired]
    assert roles == [
        ("user", None), ("assistant", None), ("toolResult", "a"), ("toolResult", "b"),
        ("user", None), ("assistant", None), ("toolResult", "c"),
    ]  # fmt: skip
    b = repaired[3]
    assert isinstance(b, pt.ToolResultMessage) and b.is_error
    assert b.details == {"interrupted": "outcome_unknown"}  # no log: it may have run
    assert b.content == [pt.TextContent(OUTCOME_UNKNOWN_TEXT.format(name="refund"))]
    assert '"refund"' in b.content[0].text  # type: ignore[union-attr]
    # the repaired transcript is valid pi JSON again
    assert load([pt.to_json(m) for m in repaired]) == repaired
    assert pt.repair_transcript(repaired) == repaired  # idempotent
    assert check_transcript(repaired) == []
    assert check_transcript(messages) != []  # (the checker sees the orphans)


def test_started_tells_not_started_from_outcome_unknown() -> None:
    repaired = pt.repair_transcript(load(PI_TRANSCRIPT), started={"c"})
    details = {m.tool_call_id: m.details for m in repaired if isinstance(m, pt.ToolResultMessage)}
    assert details == {
        "a": None,
        "b": {"interrupted": "not_started"},
        "c": {"interrupted": "outcome_unknown"},
    }
    text = next(m for m in repaired if getattr(m, "tool_call_id", "") == "b").content[0].text  # type: ignore[union-attr]
    assert "was not run" in text and "no effect" in text


def test_close_run_adds_pi_s_aborted_message() -> None:
    repaired = pt.repair_transcript(load(PI_TRANSCRIPT), close_run=True)
    last = repaired[-1]
    assert isinstance(last, pt.AssistantMessage)
    assert (last.stop_reason, last.error_message, last.content) == (
        "aborted",
        PROCESS_STOPPED_TEXT,
        [],
    )
    assert (last.provider, last.model) == ("anthropic", "claude-sonnet-4-5")
    # a run whose last word was a complete answer is not given one
    done = load([*PI_TRANSCRIPT[:1], assistant([], stop="stop")])
    assert pt.repair_transcript(done, close_run=True) == done


def test_failed_assistant_messages_keep_their_unrun_calls() -> None:
    # pi never runs the calls of an aborted message and drops it from model requests
    aborted = load([PI_TRANSCRIPT[0], assistant([("z", "refund")], stop="aborted")])
    assert pt.repair_transcript(aborted) == aborted
