"""Additions beyond pi 0.73.1 on the tool batch (issue 16): bounded fan-out, tool timeouts,
failing tools that never take the batch down, ``ToolResult(is_error=True)``,
``BeforeToolCallResult(terminate=True)``. Defaults keep 0.73.1's behaviour (the pi fixtures)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .grammar import assert_event_grammar
from .support import make_agent
from .transcript import assert_transcript_valid

SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}


def _calls(name: str, *seconds: float) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.tool_call(name, {"s": s}, id=f"c{i}") for i, s in enumerate(seconds)]
    )


def _results(agent: pt.Agent) -> list[pt.ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]


def _text(message: pt.ToolResultMessage) -> str:
    block = message.content[0]
    assert isinstance(block, pt.TextContent)
    return block.text


async def test_max_parallel_tools_bounds_the_calls_running_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    running = 0
    peak = 0
    started: list[str] = []

    async def work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        nonlocal running, peak
        started.append(tool_call_id)
        running += 1
        peak = max(peak, running)
        await trio.sleep(params["s"])
        running -= 1
        return pt.ToolResult([pt.TextContent(tool_call_id)])

    tool = pt.AgentTool("work", "Work", "works", SCHEMA, work)
    seconds = [1.0, 0.5, 0.25, 2.0, 0.1, 0.3, 0.7]
    agent = make_agent(
        [_calls("work", *seconds), faux.assistant_message("ok")],
        tool and [tool],
        max_parallel_tools=3,
    )
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    t0 = trio.current_time()
    await agent.prompt("go")
    assert peak == 3
    assert started == [f"c{i}" for i in range(len(seconds))]  # started in source order
    assert [m.tool_call_id for m in _results(agent)] == [f"c{i}" for i in range(len(seconds))]
    # three lanes: 1.0+0.1+..., the bound makes it longer than the longest call (2.0)
    assert trio.current_time() - t0 > 2.0
    assert_event_grammar(events)


async def test_unbounded_by_default(autojump_clock: trio.testing.MockClock) -> None:
    running = 0
    peak = 0

    async def work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await trio.sleep(1)
        running -= 1
        return pt.ToolResult([pt.TextContent("ok")])

    tool = pt.AgentTool("work", "Work", "works", SCHEMA, work)
    agent = make_agent([_calls("work", *[1] * 20), faux.assistant_message("ok")], [tool])
    await agent.prompt("go")
    assert peak == 20


async def test_abort_while_calls_wait_for_a_place(autojump_clock: trio.testing.MockClock) -> None:
    async def work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await trio.sleep(params["s"])
        return pt.ToolResult([pt.TextContent("ok")])

    tool = pt.AgentTool("work", "Work", "works", SCHEMA, work)
    agent = make_agent(
        [_calls("work", 1, 1, 1, 1, 1), faux.assistant_message("x")], [tool], max_parallel_tools=2
    )
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    with trio.move_on_after(1.5):
        await agent.prompt("go")
    results = _results(agent)
    assert [_text(m) for m in results] == ["ok", "ok", *["Tool execution was aborted"] * 3]
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages, aborted=True)


@pytest.mark.parametrize("where", ["tool", "config"])
async def test_a_tool_past_its_time_gets_an_error_and_the_others_go_on(
    autojump_clock: trio.testing.MockClock, where: str
) -> None:
    async def work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await trio.sleep(params["s"])
        return pt.ToolResult([pt.TextContent("done")])

    tool = pt.AgentTool("work", "Work", "works", SCHEMA, work,
                        timeout=2.0 if where == "tool" else None)  # fmt: skip
    options = {"tool_timeout": 2.0} if where == "config" else {}
    agent = make_agent([_calls("work", 1, 5, 1.5), faux.assistant_message("ok")], [tool], **options)
    await agent.prompt("go")
    slow = _results(agent)[1]
    assert slow.is_error and _text(slow) == "Tool work timed out after 2 s"
    assert slow.details == {"timed_out": True, "timeout_s": 2.0}
    assert [_text(m) for m in _results(agent)[::2]] == ["done", "done"]
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "stop"


async def test_a_sync_tool_past_its_time_is_abandoned_and_says_so() -> None:
    import threading

    release = threading.Event()

    def stuck(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        release.wait(10)
        return pt.ToolResult([pt.TextContent("late")])

    tool = pt.AgentTool("stuck", "Stuck", "blocks", SCHEMA, stuck, timeout=0.05)
    agent = make_agent([_calls("stuck", 0), faux.assistant_message("ok")], [tool])
    with trio.fail_after(5):
        await agent.prompt("go")
    release.set()
    result = _results(agent)[0]
    assert result.is_error and result.details["thread_abandoned"] is True


class _Odd(BaseException):
    pass


@pytest.mark.parametrize("raised", [_Odd("odd"), SystemExit(3), GeneratorExit()])
async def test_a_tool_raising_any_base_exception_gets_an_error_result(
    raised: BaseException,
) -> None:
    async def boom(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        raise raised

    async def fine(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent("fine")])

    tools = [
        pt.AgentTool("boom", "B", "b", SCHEMA, boom),
        pt.AgentTool("fine", "F", "f", SCHEMA, fine),
    ]
    calls = [faux.tool_call("boom", {"s": 0}, id="b"), faux.tool_call("fine", {"s": 0}, id="f")]
    agent = make_agent([faux.assistant_message(calls), faux.assistant_message("ok")], tools)
    await agent.prompt("go")
    boom_result, fine_result = _results(agent)
    assert boom_result.is_error and not fine_result.is_error
    assert _text(fine_result) == "fine"
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "stop"


async def test_a_tool_result_with_is_error_is_an_error_without_raising() -> None:
    async def refuse(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent("no such file")], is_error=True)

    agent = make_agent(
        [_calls("refuse", 0), faux.assistant_message("ok")],
        [pt.AgentTool("refuse", "R", "r", SCHEMA, refuse)],
    )
    ends: list[pt.ToolExecutionEnd] = []
    agent.subscribe(lambda e: ends.append(e) if isinstance(e, pt.ToolExecutionEnd) else None)
    await agent.prompt("go")
    assert _results(agent)[0].is_error and ends[0].is_error


async def test_a_blocked_call_may_ask_the_run_to_terminate() -> None:
    async def never(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        raise AssertionError("blocked calls do not run")

    def block(ctx: pt.BeforeToolCallContext) -> pt.BeforeToolCallResult:
        return pt.BeforeToolCallResult(block=True, reason="not allowed", terminate=True)

    agent = make_agent(
        [_calls("never", 0, 0), faux.assistant_message("unreached")],
        [pt.AgentTool("never", "N", "n", SCHEMA, never)],
        before_tool_call=block,
    )
    await agent.prompt("go")
    # every result asked to terminate: no further model call
    assert isinstance(agent.state.messages[-1], pt.ToolResultMessage)
    assert [_text(m) for m in _results(agent)] == ["not allowed", "not allowed"]


def test_bad_bounds_are_refused_where_they_are_given() -> None:
    with pytest.raises(ValueError, match="max_parallel_tools"):
        pt.AgentLoopConfig(pt.get_model("faux", "faux-1"), max_parallel_tools=0)
    with pytest.raises(ValueError, match="tool_timeout"):
        pt.AgentLoopConfig(pt.get_model("faux", "faux-1"), tool_timeout=0)
    with pytest.raises(ValueError, match="timeout must be > 0"):
        pt.AgentTool("t", "T", "t", SCHEMA, lambda *a: None, timeout=-1)


async def test_every_event_of_an_agent_carries_a_monotonic_seq(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await on_update(pt.ToolResult([pt.TextContent("half")]))
        await trio.sleep(params["s"])
        return pt.ToolResult([pt.TextContent("done")])

    tool = pt.AgentTool("work", "Work", "works", SCHEMA, work)
    script = [_calls("work", 1, 2), faux.assistant_message("one two"), faux.assistant_message("x")]
    agent = make_agent(script, [tool])
    seen: list[pt.AgentEvent] = []
    agent.subscribe(seen.append)
    async with agent.events() as rx:
        await agent.prompt("go")
        await agent.prompt("again")
        channel = [rx.receive_nowait() for _ in range(rx.statistics().current_buffer_used)]
    seqs = [e.seq for e in seen]
    assert seqs == list(range(1, len(seen) + 1))  # per agent, across runs, no gaps
    assert [e.seq for e in channel] == seqs
    # not part of pi's JSON, and ignored when read back
    data = pt.to_json(seen[0])
    assert "seq" not in data
    assert pt.from_json(data, pt.AgentEvent).seq is None


async def test_tool_execution_end_says_how_long_the_call_took(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await trio.sleep(params["s"])
        return pt.ToolResult([pt.TextContent("done")])

    tool = pt.AgentTool("work", "Work", "works", SCHEMA, work)
    calls = [faux.tool_call("work", {"s": 1.5}, id="w"), faux.tool_call("nope", {}, id="n")]
    agent = make_agent([faux.assistant_message(calls), faux.assistant_message("ok")], [tool])
    ends: dict[str, pt.ToolExecutionEnd] = {}
    agent.subscribe(
        lambda e: ends.update({e.tool_call_id: e}) if isinstance(e, pt.ToolExecutionEnd) else None
    )
    await agent.prompt("go")
    assert ends["w"].duration_ms == 1500.0  # the mock clock's time
    assert ends["n"].duration_ms is None  # never executed (unknown tool)
    assert pt.to_json(ends["w"])["durationMs"] == 1500  # pi 1.6's field, whole milliseconds
    assert "durationMs" not in pt.to_json(ends["n"])


def _noop_turns(count: int, calls_per_turn: int = 1, tokens: int = 0, cost: float = 0.0) -> Any:
    usage = pt.Usage(total_tokens=tokens, cost=pt.UsageCost(total=cost))
    return [
        faux.assistant_message(
            [faux.tool_call("work", {"s": 0}, id=f"t{t}c{c}") for c in range(calls_per_turn)],
            usage=usage,
        )
        for t in range(count)
    ]


async def _quick(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("ok")])


QUICK = pt.AgentTool("work", "Work", "works", SCHEMA, _quick)


@pytest.mark.parametrize(
    ("budget", "script", "turns", "text"),
    [
        ({"max_turns": 2}, _noop_turns(5), 2, "max_turns=2 reached (2 used)"),
        ({"max_tool_calls": 3}, _noop_turns(5, calls_per_turn=2), 2, "max_tool_calls=3 reached (4"),
        ({"max_total_tokens": 250}, _noop_turns(5, tokens=100), 3, "max_total_tokens=250 reached"),
        ({"max_cost": 0.25}, _noop_turns(5, cost=0.1), 3, "max_cost=0.25 reached (0.3 used)"),
    ],
)
async def test_a_budget_ends_the_run_after_the_turn_that_reaches_it(
    budget: dict[str, Any], script: list[Any], turns: int, text: str
) -> None:
    agent = make_agent([*script, faux.assistant_message("done")], [QUICK], **budget)
    seen: list[pt.AgentEvent] = []
    agent.subscribe(seen.append)
    async with agent.events() as rx:
        await agent.prompt("go")
        received = [rx.receive_nowait() for _ in range(rx.statistics().current_buffer_used)]
    assert sum(isinstance(e, pt.TurnEnd) for e in seen) == turns
    assert agent.state.error_message is not None and text in agent.state.error_message
    notices = [e for e in received if isinstance(e, pt.BudgetReached)]
    assert [n.budget for n in notices] == list(budget)
    assert_transcript_valid(agent.state.messages)  # every call of the last turn answered
    assert isinstance(agent.state.messages[-1], pt.ToolResultMessage)
    assert_event_grammar(seen)


async def test_no_budget_by_default_and_a_budget_is_per_run() -> None:
    agent = make_agent([*_noop_turns(3), faux.assistant_message("done")], [QUICK])
    await agent.prompt("go")
    assert agent.state.error_message is None
    agent = make_agent([*_noop_turns(3), faux.assistant_message("done")], [QUICK], max_turns=2)
    await agent.prompt("go")
    assert agent.state.error_message is not None
    await agent.continue_()  # a new run: counted afresh; it ends on its 2nd turn by itself
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "stop"
    assert agent.state.error_message is None


def test_budgets_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        pt.Agent(max_turns=0)
    with pytest.raises(ValueError, match="max_cost"):
        pt.Agent(max_cost=0)


def test_the_tool_decorator_takes_a_timeout_and_replay() -> None:
    @pt.tool(timeout=2.5, replay="safe")
    async def lookup(key: str) -> str:
        """Look a key up."""
        return key

    assert (lookup.timeout, lookup.replay, lookup.name) == (2.5, "safe", "lookup")

    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    with pytest.raises(ValueError, match="timeout must be > 0"):
        pt.tool(timeout=0)(shout)
    with pytest.raises(ValueError, match="replay must be 'never' or 'safe'"):
        pt.tool(replay="always")(shout)  # type: ignore[call-overload]
