"""``steering_policy="at_tool_boundary"`` (issue 16, pi#4001): a steer queued while a tool batch
runs stops the calls not yet finished; "after_batch" (pi's default) lets the batch finish."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .grammar import assert_event_grammar
from .support import RecordingSink, make_agent, make_scripted_agent
from .transcript import assert_transcript_valid

SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}


def _calls(*seconds: float) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.tool_call("work", {"s": s}, id=f"c{i}") for i, s in enumerate(seconds)]
    )


ran: list[str] = []


async def _work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    ran.append(tool_call_id)
    await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent(f"{tool_call_id} done")])


WORK = pt.AgentTool("work", "Work", "works", SCHEMA, _work)


@pytest.fixture(autouse=True)
def _nothing_ran_yet() -> None:
    ran.clear()


def _results(agent: pt.Agent) -> dict[str, pt.ToolResultMessage]:
    return {m.tool_call_id: m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)}


def _text(message: pt.ToolResultMessage) -> str:
    block = message.content[0]
    assert isinstance(block, pt.TextContent)
    return block.text


async def _prompt_and_steer_at(agent: pt.Agent, at: float) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(at)
        agent.steer("change of plan")


async def test_a_steer_during_the_batch_stops_the_calls_not_finished(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # c0 finishes at 0.5 (before the steer); c1 and c2 run when it comes at 1.0; c3 waits for a
    # place (max_parallel_tools=2) and never starts
    agent, scripted = make_scripted_agent(
        [_calls(0.5, 10.0, 10.0, 10.0), faux.assistant_message("ok, new plan")],
        [WORK],
        steering_policy="at_tool_boundary",
        max_parallel_tools=2,
    )
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    t0 = trio.current_time()
    await _prompt_and_steer_at(agent, 1.0)
    assert trio.current_time() - t0 < 10.0  # nobody waited for the slow calls
    results = _results(agent)
    assert _text(results["c0"]) == "c0 done" and not results["c0"].is_error
    for call_id in ("c1", "c2"):
        assert results[call_id].is_error
        assert "a steering message was queued while it ran" in _text(results[call_id])
        assert results[call_id].details == {"stopped_by": "steering", "started": True}
    assert results["c3"].details == {"stopped_by": "steering", "started": False}
    assert "before it started" in _text(results["c3"])
    assert ran == ["c0", "c1", "c2"]  # c3 never ran
    # the steer goes in before the next request, after the batch's results
    request = scripted.calls[1].context.messages
    last = request[-1]
    assert isinstance(last, pt.UserMessage) and last.content[0].text == "change of plan"  # type: ignore[union-attr]
    assert [type(m).__name__ for m in request[-5:-1]] == ["ToolResultMessage"] * 4
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages)


async def test_after_batch_the_default_lets_every_call_finish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent, scripted = make_scripted_agent(
        [_calls(0.5, 3.0, 3.0), faux.assistant_message("ok")], [WORK]
    )
    await _prompt_and_steer_at(agent, 1.0)
    results = _results(agent)
    assert [_text(results[f"c{i}"]) for i in range(3)] == ["c0 done", "c1 done", "c2 done"]
    assert isinstance(scripted.calls[1].context.messages[-1], pt.UserMessage)


async def test_sequential_batch_stops_the_running_call_and_skips_the_rest(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent(
        [_calls(5.0, 1.0, 1.0), faux.assistant_message("ok")],
        [WORK],
        steering_policy="at_tool_boundary",
        tool_execution="sequential",
    )
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    await _prompt_and_steer_at(agent, 1.0)
    results = _results(agent)
    assert [results[f"c{i}"].details["started"] for i in range(3)] == [True, False, False]  # type: ignore[index]
    assert ran == ["c0"]
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages)


async def test_a_steer_queued_before_the_batch_does_not_stop_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # queued while the model streamed (at the assistant message's end): it waits for the batch
    agent, scripted = make_scripted_agent(
        [_calls(1.0, 1.0), faux.assistant_message("ok")], [WORK], steering_policy="at_tool_boundary"
    )

    def steer_once(event: pt.AgentEvent) -> None:
        first = isinstance(event, pt.MessageEnd) and len(scripted.calls) == 1
        if first and isinstance(event.message, pt.AssistantMessage):  # type: ignore[union-attr]
            agent.steer("by the way")

    agent.subscribe(steer_once)
    await agent.prompt("go")
    assert [_text(m) for m in _results(agent).values()] == ["c0 done", "c1 done"]
    assert isinstance(scripted.calls[1].context.messages[-1], pt.UserMessage)


async def test_a_call_that_finished_before_the_stop_reached_it_keeps_its_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # c0 queues the steer itself, lets the watcher run (shielded), then returns without another
    # checkpoint: its cancel scope was cancelled, but the cancellation never cut it short, so
    # its real result stands; c1 is stopped
    script = [
        faux.assistant_message(
            [faux.tool_call("steerer", {}, id="c0"), faux.tool_call("work", {"s": 5}, id="c1")]
        ),
        faux.assistant_message("ok"),
    ]

    async def steerer(tool_call_id: str, params: Any, on_update: Any) -> str:
        agent.steer("from inside the tool")
        with trio.CancelScope(shield=True):  # the watcher runs and cancels our scope...
            await trio.testing.wait_all_tasks_blocked()
        return "steerer done"  # ...but we return before any checkpoint could deliver it

    steering = pt.AgentTool("steerer", "Steerer", "steers", {"type": "object"}, steerer)
    agent = make_agent(script, [steering, WORK], steering_policy="at_tool_boundary")
    await agent.prompt("go")
    results = _results(agent)
    assert _text(results["c0"]) == "steerer done" and not results["c0"].is_error
    # c1 is stopped or never started, depending on which task the scheduler ran first
    assert results["c1"].is_error and results["c1"].details["stopped_by"] == "steering"  # type: ignore[index]


def test_the_policy_is_checked_where_it_is_given() -> None:
    model = faux.FauxModel([]).model
    with pytest.raises(ValueError, match="steering_policy must be"):
        pt.AgentLoopConfig(model, steering_policy="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs steering_signal"):
        pt.AgentLoopConfig(model, steering_policy="at_tool_boundary")


async def test_a_steer_from_before_tool_call_runs_no_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent: pt.Agent

    def before(context: pt.BeforeToolCallContext) -> None:
        if context.tool_call.id == "c0":
            agent.steer("stop, all of it")

    agent = make_agent(
        [_calls(1, 1, 1), faux.assistant_message("ok")],
        [WORK],
        steering_policy="at_tool_boundary",
        before_tool_call=before,
    )
    await agent.prompt("go")
    assert_transcript_valid(agent.state.messages)
    assert ran == []  # steered before any call started: none executes


@pytest.mark.parametrize(
    "signal",
    [lambda: (_ for _ in ()).throw(RuntimeError("steering source broke")), lambda: "not an event"],
    ids=["raises", "not-an-event"],
)
async def test_a_failing_steering_signal_ends_the_run_with_an_error(
    autojump_clock: trio.testing.MockClock, signal: Any
) -> None:
    scripted = faux.FauxModel([_calls(1, 2), faux.assistant_message("ok")])
    context = pt.AgentContext("", [], [WORK])
    config = pt.AgentLoopConfig(
        scripted.model,
        stream_fn=scripted,
        steering_policy="at_tool_boundary",
        steering_signal=signal,
    )
    await pt.run_agent_loop([pt.UserMessage("go")], context, config, RecordingSink())
    last = context.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"
    assert_transcript_valid(context.messages)
