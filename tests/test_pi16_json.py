"""pi 1.6's JSON: every message and event pi 1.6 writes reads and writes back unchanged (a
newer pi's unknown fields too), its system messages give the prompt and tools pi derives, and
pi 1.6's additions a pi_trio run makes (``durationMs``, ``structuredContent``, a tool's
``usage``) are on the wire as pi writes them.

``tests/data/pi16/traces.json`` was recorded from pi 1.6 on Node by
``tests/pi16/record_traces.mjs``; the slow test records it afresh.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt

from .pi_node import run_node
from .support import make_agent, with_future_fields

TRACES = Path(__file__).parent / "data" / "pi16" / "traces.json"


def _traces() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(TRACES.read_text())
    return data


def _assert_round_trips(traces: dict[str, Any]) -> None:
    for index, event in enumerate(traces["events"]):
        assert pt.to_json(pt.from_json(event, pt.AgentEvent)) == event, index
    for index, message in enumerate(traces["messages"]):
        assert pt.to_json(pt.from_json(message, pt.AgentMessage)) == message, index


def test_every_message_and_event_pi_16_wrote_round_trips_unchanged() -> None:
    traces = _traces()
    roles = {m["role"] for m in traces["messages"]}
    assert roles == {"system", "user", "assistant", "toolResult"}
    _assert_round_trips(traces)


def test_the_recorded_traces_hold_what_pi_16_added() -> None:
    """The recording is worth testing against: each 1.6 addition is in it."""
    text = TRACES.read_text()
    for key in ('"toolsAdded"', '"toolsRemoved"', '"sections"', '"durationMs"', '"thinkingLevel"',
                '"structuredContent"', '"deferred"', '"stopReason": "deferred"'):  # fmt: skip
        assert key in text, key


def test_pi_16_messages_become_the_records_that_model_them() -> None:
    messages = [pt.from_json(m, pt.AgentMessage) for m in _traces()["messages"]]
    system = messages[0]
    assert isinstance(system, pt.SystemMessage)
    assert system.text == "You are a calculator."
    assert [tool.name for tool in system.tools_added] == ["sum"]
    changes = [m for m in messages[1:] if isinstance(m, pt.SystemMessage)]
    assert any(m.tools_removed == ("sum",) for m in changes)
    assert any(m.sections == {"style": "Answer briefly."} for m in changes)
    deferred = [m for m in messages if getattr(m, "stop_reason", None) == "deferred"]
    assert len(deferred) == 1 and deferred[0].deferred["id"] == "deferred_1"  # type: ignore[union-attr]
    result = next(m for m in messages if isinstance(m, pt.ToolResultMessage))
    assert result.usage is not None and result.usage.total_tokens == 4
    assert result.duration_ms is not None
    end = next(
        e for e in (pt.from_json(x, pt.AgentEvent) for x in _traces()["events"])
        if isinstance(e, pt.ToolExecutionEnd)
    )  # fmt: skip
    assert end.result.structured_content == {"total": 5}
    assert end.duration_ms is not None


def test_a_newer_pi_s_unknown_fields_are_kept_at_every_level() -> None:
    counter = [0]
    traces = with_future_fields(_traces(), counter)
    assert counter[0] > 500  # every message, block, usage, event, tool result...
    _assert_round_trips(traces)


def test_kept_fields_are_checked_as_json_and_named_where_they_fail() -> None:
    message = _traces()["messages"][2]
    bad = copy.deepcopy(message)
    bad["content"][0]["future"] = float("nan")
    with pytest.raises(pt.WireFormatError, match=r"content\[0\]\.future: .*nan"):
        pt.from_json(bad, pt.AgentMessage)
    deep: Any = 0
    for _ in range(80):
        deep = [deep]
    bad = {**message, "future": deep}
    with pytest.raises(pt.WireFormatError, match=r"future.*nested deeper"):
        pt.from_json(bad, pt.AgentMessage)


def test_kept_fields_never_override_modelled_ones() -> None:
    message = pt.UserMessage("hi", timestamp=5, extra={"role": "assistant", "timestamp": 9, "x": 1})
    assert pt.to_json(message) == {"role": "user", "content": "hi", "timestamp": 5, "x": 1}


def test_a_bad_system_message_is_refused_with_the_path_of_each_problem() -> None:
    bad = {"role": "system", "content": 3, "sections": {"a": 1}, "toolsRemoved": [{"n": 1}]}
    with pytest.raises(pt.WireFormatError) as caught:
        pt.from_json(bad, pt.AgentMessage)
    text = str(caught.value)
    assert "content: expected a string or an array of text blocks" in text
    assert "sections: section 'a': expected a string or null" in text
    assert "toolsRemoved: [0]: expected an object with a string name" in text
    assert "timestamp" in text  # missing


def test_system_messages_replay_to_the_prompt_and_tools_pi_derives() -> None:
    traces = _traces()
    messages = [pt.from_json(m, pt.AgentMessage) for m in traces["messages"]]
    prompt, tools = pt.current_system(messages)
    assert prompt == traces["current"]["systemPrompt"]
    assert [tool.name for tool in tools] == traces["current"]["tools"]


def test_sections_patch_by_name_and_a_null_removes_one() -> None:
    messages = [
        pt.SystemMessage("Base", sections={"a": "one", "b": "two"}),
        pt.SystemMessage("", sections={"a": "ONE", "b": None}),
        pt.SystemMessage([pt.TextContent("More")]),
    ]
    prompt, _ = pt.current_system(messages, "Agent's own")
    assert prompt == "Agent's own\n\nBase\n\nMore\n\nONE"


def test_a_context_without_system_messages_is_left_as_it_is() -> None:
    context = pt.Context("p", [pt.UserMessage("hi")], [])
    assert pt.collapse_system_messages(context) is context


@pytest.mark.slow
def test_what_pi_16_writes_today_round_trips_and_replays_the_same() -> None:
    """Recorded afresh with pi 1.6 on Node (timestamps and ids are new each time)."""
    traces = json.loads(run_node("record_traces.mjs").stdout)
    _assert_round_trips(traces)
    messages = [pt.from_json(m, pt.AgentMessage) for m in traces["messages"]]
    prompt, tools = pt.current_system(messages)
    assert (prompt, [t.name for t in tools]) == (
        traces["current"]["systemPrompt"],
        traces["current"]["tools"],
    )


# --- what a pi_trio run writes ---------------------------------------------------------------


def _sum_tool(seconds: float = 0.0) -> pt.AgentTool:
    async def execute(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await trio.sleep(seconds)
        total = params["a"] + params["b"]
        return pt.ToolResult(
            [pt.TextContent(str(total))],
            structured_content={"total": total},
            usage=pt.Usage(input=3, output=1, total_tokens=4),
        )

    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
    return pt.AgentTool("sum", "Sum", "Adds", schema, execute, output_schema={"type": "object"})


def _summing_agent(tool: pt.AgentTool, **options: Any) -> pt.Agent:
    """An agent whose model calls ``sum(2, 3)`` once, then answers."""
    script = [
        pt.faux.assistant_message([pt.faux.tool_call("sum", {"a": 2, "b": 3}, id="c1")]),
        pt.faux.assistant_message("5"),
    ]
    return make_agent(script, tools=[tool], **options)


async def test_tool_execution_end_carries_its_duration_as_pi_writes_it(autojump_clock: Any) -> None:
    agent = _summing_agent(_sum_tool(seconds=0.25))
    ends: list[pt.ToolExecutionEnd] = []
    agent.subscribe(lambda e: ends.append(e) if isinstance(e, pt.ToolExecutionEnd) else None)
    await agent.prompt("2 + 3?")
    (end,) = ends
    wire = pt.to_json(end)
    assert wire["durationMs"] == 250
    assert wire["result"]["structuredContent"] == {"total": 5}
    assert pt.from_json(wire, pt.AgentEvent) == end


async def test_a_tool_s_usage_reaches_its_result_message_and_structured_content_does_not(
    autojump_clock: Any,
) -> None:
    agent = _summing_agent(_sum_tool())
    await agent.prompt("2 + 3?")
    result = next(m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage))
    assert result.usage == pt.Usage(input=3, output=1, total_tokens=4)
    wire = pt.to_json(result)
    assert wire["usage"]["totalTokens"] == 4
    assert "structuredContent" not in json.dumps(wire)  # never sent to the model


async def test_after_tool_call_new_content_drops_the_structured_content(
    autojump_clock: Any,
) -> None:
    agent = _summing_agent(
        _sum_tool(),
        after_tool_call=lambda ctx: pt.AfterToolCallResult(content=[pt.TextContent("five")]),
    )
    ends: list[pt.ToolExecutionEnd] = []
    agent.subscribe(lambda e: ends.append(e) if isinstance(e, pt.ToolExecutionEnd) else None)
    await agent.prompt("2 + 3?")
    assert ends[0].result.structured_content is None  # it may no longer match "five"
    assert ends[0].result.usage is not None  # kept


async def test_the_interop_page_s_example_runs() -> None:
    import runpy

    example = Path(__file__).parents[1] / "docs" / "examples" / "pi16_transcript.py"
    await runpy.run_path(str(example))["main"]()
