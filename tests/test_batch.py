"""The tool batch through ``pt.run_agent_loop`` (DESIGN.md section 3, "Tool batch").

Parallel: tool_execution_end in completion order, the tool-result messages in source order
after the whole batch. Sequential (by config, or because one tool of the batch asks for it):
one call at a time, each result right after its call. Unknown tools, invalid arguments and
blocked calls become error results at once. ``terminate`` stops the run only when every
result of the batch asks for it. All timing is the virtual time of ``MockClock``.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .grammar import assert_event_grammar
from .support import (
    ECHO,
    PROMPT,
    SLEEP,
    SLEEP_SCHEMA,
    RecordingSink,
    calls,
    faux,
    loop_setup,
    tool_results,
)
from .transcript import assert_transcript_valid


class TimedSink(RecordingSink):
    """Also records the virtual time each event was sent at."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    async def send(self, event: pt.AgentEvent) -> None:
        await super().send(event)
        self.times.append(trio.current_time())

    def when(self, kind: type[Any], tool_call_id: str) -> float:
        for event, at in zip(self.events, self.times, strict=True):
            if isinstance(event, kind) and getattr(event, "tool_call_id", None) == tool_call_id:
                return at
        raise AssertionError(f"no {kind.__name__} for {tool_call_id}")


def _ends(sink: RecordingSink) -> list[str]:
    return [e.tool_call_id for e in sink.events if isinstance(e, pt.ToolExecutionEnd)]


def _result_messages(sink: RecordingSink) -> list[str]:
    return [
        e.message.tool_call_id
        for e in sink.events
        if isinstance(e, pt.MessageEnd) and isinstance(e.message, pt.ToolResultMessage)
    ]


def _tool_events(sink: RecordingSink) -> list[str]:
    """The batch's events, shortened: start:call_1, end:call_1, result:call_1."""
    out = []
    for e in sink.events:
        if isinstance(e, pt.ToolExecutionStart):
            out.append(f"start:{e.tool_call_id}")
        elif isinstance(e, pt.ToolExecutionEnd):
            out.append(f"end:{e.tool_call_id}")
        elif isinstance(e, pt.MessageEnd) and isinstance(e.message, pt.ToolResultMessage):
            out.append(f"result:{e.message.tool_call_id}")
    return out


SLEEPS_3_1_2 = calls(("sleep", {"s": 3}), ("sleep", {"s": 1}), ("sleep", {"s": 2}))


async def test_parallel_ends_in_completion_order_results_in_source_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ctx, cfg, _, scripted = loop_setup([SLEEPS_3_1_2, faux.assistant_message("done")])
    sink = TimedSink()
    start = trio.current_time()
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert trio.current_time() - start == 3  # the three calls overlapped
    starts = [e.tool_call_id for e in sink.events if isinstance(e, pt.ToolExecutionStart)]
    assert starts == ["call_1", "call_2", "call_3"]  # prepared in source order
    assert _ends(sink) == ["call_2", "call_3", "call_1"]  # completion order
    assert [sink.when(pt.ToolExecutionEnd, c) - start for c in starts] == [3, 1, 2]
    assert _result_messages(sink) == ["call_1", "call_2", "call_3"]  # source order
    # every result message goes out after the last call of the batch ended
    assert _tool_events(sink) == [
        "start:call_1", "start:call_2", "start:call_3", "end:call_2", "end:call_3", "end:call_1",
        "result:call_1", "result:call_2", "result:call_3",
    ]  # fmt: skip
    assert tool_results(ctx.messages) == [
        ("call_1", "slept 3", False), ("call_2", "slept 1", False), ("call_3", "slept 2", False),
    ]  # fmt: skip
    # the second request saw the results in source order
    assert [getattr(m, "tool_call_id", m.role) for m in scripted.calls[1].context.messages] == [
        "user", "assistant", "call_1", "call_2", "call_3",
    ]  # fmt: skip
    assert_event_grammar(sink.events)
    assert_transcript_valid(ctx.messages)


async def test_sequential_mode_runs_one_call_at_a_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ctx, cfg, _, _ = loop_setup(
        [SLEEPS_3_1_2, faux.assistant_message("done")], tool_execution="sequential"
    )
    sink = TimedSink()
    start = trio.current_time()
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert trio.current_time() - start == 6  # 3 + 1 + 2, one after the other
    assert _tool_events(sink) == [
        "start:call_1", "end:call_1", "result:call_1",
        "start:call_2", "end:call_2", "result:call_2",
        "start:call_3", "end:call_3", "result:call_3",
    ]  # fmt: skip
    assert [sink.when(pt.ToolExecutionEnd, f"call_{i}") - start for i in (1, 2, 3)] == [3, 4, 6]
    assert_event_grammar(sink.events)
    assert_transcript_valid(ctx.messages)


async def _sleep_alone(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent("alone")])


ALONE = pt.AgentTool(
    "alone", "Alone", "sleeps, never beside another call", SLEEP_SCHEMA, _sleep_alone,
    execution_mode="sequential",
)  # fmt: skip


@pytest.mark.parametrize("alone_at", [0, 1, 2])
async def test_one_sequential_tool_makes_the_whole_batch_sequential(
    autojump_clock: trio.testing.MockClock, alone_at: int
) -> None:
    specs: list[tuple[str, dict[str, Any]]] = [("sleep", {"s": 3}), ("sleep", {"s": 1}),
                                               ("sleep", {"s": 2})]  # fmt: skip
    specs[alone_at] = ("alone", specs[alone_at][1])
    ctx, cfg, _, _ = loop_setup(
        [calls(*specs), faux.assistant_message("done")], [SLEEP, ALONE], tool_execution="parallel"
    )
    sink = TimedSink()
    start = trio.current_time()
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert trio.current_time() - start == 6
    assert _tool_events(sink)[:3] == ["start:call_1", "end:call_1", "result:call_1"]
    assert _ends(sink) == ["call_1", "call_2", "call_3"]
    assert_transcript_valid(ctx.messages)


async def test_immediate_error_results_for_unknown_invalid_and_blocked_calls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    executed: list[str] = []
    consulted: list[str] = []

    async def counting_sleep(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        executed.append(tool_call_id)
        await trio.sleep(params["s"])
        return pt.ToolResult([pt.TextContent("slept")])

    def before(ctx: pt.BeforeToolCallContext) -> pt.BeforeToolCallResult | None:
        consulted.append(ctx.tool_call.id)
        if ctx.tool_call.id == "call_4":
            return pt.BeforeToolCallResult(block=True, reason="not today")
        return None

    sleep = pt.AgentTool("sleep", "Sleep", "sleeps", SLEEP_SCHEMA, counting_sleep)
    batch = calls(("sleep", {"s": 5}), ("nope", {}), ("sleep", {"s": "x"}), ("sleep", {"s": 1}))
    ctx, cfg, _, _ = loop_setup(
        [batch, faux.assistant_message("done")], [sleep, ECHO], before_tool_call=before
    )
    sink = TimedSink()
    start = trio.current_time()
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert executed == ["call_1"]  # none of the three others ran
    assert consulted == ["call_1", "call_4"]  # the hook sees only calls that validated
    results = {call: (text, error) for call, text, error in tool_results(ctx.messages)}
    assert results["call_1"] == ("slept", False)
    assert results["call_2"] == ("Tool nope not found", True)
    assert results["call_3"][1] and results["call_3"][0].startswith(
        'Validation failed for tool "sleep"'
    )
    assert "s: must be number" in results["call_3"][0]
    assert results["call_4"] == ("not today", True)
    # "at once": their ends go out while call_1 still sleeps, before call_1's end
    for call in ("call_2", "call_3", "call_4"):
        assert sink.when(pt.ToolExecutionEnd, call) == start
        ends = [e for e in sink.events if isinstance(e, pt.ToolExecutionEnd)]
        assert [e.is_error for e in ends if e.tool_call_id == call] == [True]
    assert _ends(sink) == ["call_2", "call_3", "call_4", "call_1"]
    assert _result_messages(sink) == ["call_1", "call_2", "call_3", "call_4"]
    assert_event_grammar(sink.events)
    assert_transcript_valid(ctx.messages)


async def _finish(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("finished")], terminate=True)


FINISH = pt.AgentTool("finish", "Finish", "ends the run", {"type": "object"}, _finish)


@pytest.mark.parametrize(
    ("batch", "stops"),
    [
        ([("finish", {}), ("finish", {})], True),
        ([("finish", {})], True),
        ([("finish", {}), ("echo", {"text": "a"})], False),
        ([("echo", {"text": "a"}), ("finish", {})], False),
    ],
    ids=["all-terminate", "one-call-terminates", "first-only", "last-only"],
)
@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_terminate_only_when_every_result_terminates(
    batch: list[tuple[str, dict[str, Any]]], stops: bool, mode: str
) -> None:
    ctx, cfg, sink, scripted = loop_setup(
        [calls(*batch), faux.assistant_message("after")], [FINISH, ECHO], tool_execution=mode
    )
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert len(scripted.calls) == (1 if stops else 2)
    last = ctx.messages[-1]
    if stops:
        assert isinstance(last, pt.ToolResultMessage)
        assert sink.types[-2:] == ["turn_end", "agent_end"]
    else:
        assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "stop"
    assert_event_grammar(sink.events)
    assert_transcript_valid(ctx.messages)
