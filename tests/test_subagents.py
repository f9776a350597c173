"""Sub-agents (``pt.subagent_tool``): a child agent runs inside the parent's tool call, under
the parent's cancel scope; its events reach the parent's subscribers, in order and nested by
depth; its failures are the call's error result; nesting stops at a depth limit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .support import (
    ECHO,
    SLEEP,
    TOOL_ABORTED_TEXT,
    assert_aborted,
    calls,
    faux,
    make_agent,
    record,
    tool_results,
)


class LiveTasks(trio.abc.Instrument):
    """The tasks spawned since it was installed that have not exited."""

    def __init__(self) -> None:
        self.alive: set[trio.lowlevel.Task] = set()

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.alive.add(task)

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self.alive.discard(task)


class Children:
    """A child factory that keeps every agent it made (their scripts from ``scripts``)."""

    def __init__(
        self,
        scripts: Callable[[], Sequence[faux.FauxResponse]],
        tools: Sequence[pt.AgentTool] = (SLEEP, ECHO),
    ) -> None:
        self.scripts = scripts
        self.tools = tools
        self.made: list[pt.Agent] = []
        self.events: list[list[dict[str, Any]]] = []  # each child's events, as pi's JSON

    def __call__(self, tool_call_id: str, params: Any) -> pt.Agent:
        agent = make_agent(list(self.scripts()), tools=self.tools)
        self.made.append(agent)
        seen: list[dict[str, Any]] = []
        agent.subscribe(lambda event: seen.append(as_forwarded(pt.to_json(event))))
        self.events.append(seen)
        return agent


def as_forwarded(event_json: dict[str, Any]) -> dict[str, Any]:
    """A child event's pi JSON (taken when it was delivered) as the parent gets it: a
    message_update without its partial message (twice in pi's JSON)."""
    if event_json["type"] != "message_update":
        return event_json
    inner = {k: v for k, v in event_json["assistantMessageEvent"].items() if k != "partial"}
    return {"type": "message_update", "assistantMessageEvent": inner}


def answering(text: str = "child answer") -> Callable[[], list[faux.FauxResponse]]:
    return lambda: [faux.assistant_message(text)]


def forwarded(events: Sequence[pt.AgentEvent], call_id: str = "call_1") -> list[dict[str, Any]]:
    """The ``details["subagent"]`` of each update of the parent's call ``call_id``."""
    return [
        event.partial_result.details["subagent"]
        for event in events
        if isinstance(event, pt.ToolExecutionUpdate) and event.tool_call_id == call_id
    ]


def research(children: Children, **options: Any) -> pt.AgentTool:
    return pt.subagent_tool("research", "Researches a task", children, **options)


def parent_of(tool: pt.AgentTool, *script: faux.FauxResponse, **options: Any) -> pt.Agent:
    return make_agent(list(script), tools=(tool,), **options)


async def test_child_events_reach_the_parent_in_order_with_depth_1() -> None:
    children = Children(lambda: [calls(("echo", {"text": "hi"})), faux.assistant_message("A")])
    parent = parent_of(
        research(children), calls(("research", {"task": "find A"})), faux.assistant_message("ok")
    )
    events = record(parent)
    await parent.prompt("go")

    updates = forwarded(events)
    assert [update["depth"] for update in updates] == [1] * len(updates)
    assert [update["event"] for update in updates] == children.events[0]
    types = [event.type for event in events]
    start, end = types.index("tool_execution_start"), types.index("tool_execution_end")
    assert set(types[start + 1 : end]) == {"tool_execution_update"}  # all inside the call
    assert tool_results(parent.state.messages) == [("call_1", "A", False)]


async def test_a_grandchild_s_events_arrive_nested_with_depth_2() -> None:
    grandchildren = Children(answering("deep answer"))
    children = Children(
        lambda: [calls(("research", {"task": "dig"})), faux.assistant_message("B")],
        tools=(research(grandchildren),),
    )
    parent = parent_of(
        research(children), calls(("research", {"task": "find B"})), faux.assistant_message("ok")
    )
    events = record(parent)
    await parent.prompt("go")

    nested = [
        update["event"]["partialResult"]["details"]["subagent"]
        for update in forwarded(events)
        if update["event"]["type"] == "tool_execution_update"
    ]
    assert [item["depth"] for item in nested] == [2] * len(nested)
    assert [item["event"] for item in nested] == grandchildren.events[0]
    assert tool_results(children.made[0].state.messages) == [("call_1", "deep answer", False)]
    assert tool_results(parent.state.messages) == [("call_1", "B", False)]


async def test_abort_mid_child_closes_both_in_the_aborted_shape_leaving_no_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    children = Children(lambda: [calls(("sleep", {"s": 100})), faux.assistant_message("late")])
    parent = parent_of(
        research(children), calls(("research", {"task": "slow"})), faux.assistant_message("ok")
    )

    def abort_when_the_child_sleeps(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.ToolExecutionUpdate):
            inner = event.partial_result.details["subagent"]["event"]
            if inner["type"] == "tool_execution_start":
                parent.abort()

    parent.subscribe(abort_when_the_child_sleeps)
    live = LiveTasks()
    trio.lowlevel.add_instrument(live)
    try:
        await parent.prompt("go")
        await trio.testing.wait_all_tasks_blocked()
    finally:
        trio.lowlevel.remove_instrument(live)
    assert live.alive == set()
    assert trio.current_time() < 100  # the child's sleep was cut short
    assert_aborted(parent)
    assert tool_results(parent.state.messages) == [("call_1", TOOL_ABORTED_TEXT, True)]
    (child,) = children.made
    assert_aborted(child)
    assert tool_results(child.state.messages) == [("call_1", TOOL_ABORTED_TEXT, True)]


async def test_a_deadline_of_the_parent_s_caller_closes_the_child(
    autojump_clock: trio.testing.MockClock,
) -> None:
    children = Children(lambda: [calls(("sleep", {"s": 100})), faux.assistant_message("late")])
    parent = parent_of(
        research(children), calls(("research", {"task": "slow"})), faux.assistant_message("ok")
    )
    with trio.move_on_after(5) as deadline:
        await parent.prompt("go")
    assert deadline.cancelled_caught
    assert_aborted(parent)
    assert_aborted(children.made[0])


async def test_the_tool_s_timeout_closes_the_child_and_the_parent_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    children = Children(lambda: [calls(("sleep", {"s": 100})), faux.assistant_message("late")])
    parent = parent_of(
        research(children, timeout=5),
        calls(("research", {"task": "slow"})),
        faux.assistant_message("ok"),
    )
    await parent.prompt("go")
    ((_, text, is_error),) = tool_results(parent.state.messages)
    assert is_error and "timed out after 5 s" in text
    assert parent.state.messages[-1].stop_reason == "stop"
    assert_aborted(children.made[0])


async def test_two_children_of_one_batch_run_at_the_same_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    children = Children(lambda: [calls(("sleep", {"s": 10})), faux.assistant_message("done")])
    parent = parent_of(
        research(children),
        calls(("research", {"task": "one"}), ("research", {"task": "two"})),
        faux.assistant_message("ok"),
    )
    events = record(parent)
    await parent.prompt("go")

    order = [
        (event.tool_call_id, event.partial_result.details["subagent"]["event"]["type"])
        for event in events
        if isinstance(event, pt.ToolExecutionUpdate)
    ]
    starts = [order.index((call, "tool_execution_start")) for call in ("call_1", "call_2")]
    ends = [order.index((call, "tool_execution_end")) for call in ("call_1", "call_2")]
    assert max(starts) < min(ends)  # both children were sleeping at once
    assert tool_results(parent.state.messages) == [
        ("call_1", "done", False),
        ("call_2", "done", False),
    ]


async def test_past_the_depth_limit_the_call_is_an_error_and_no_agent_is_made() -> None:
    made: list[pt.Agent] = []

    def recursive(tool_call_id: str, params: Any) -> pt.Agent:
        agent = make_agent(
            [calls(("research", {"task": "deeper"})), faux.assistant_message("up")],
            tools=(tool,),
        )
        made.append(agent)
        return agent

    tool = pt.subagent_tool("research", "Researches", recursive, max_depth=2)
    parent = parent_of(tool, calls(("research", {"task": "go"})), faux.assistant_message("ok"))
    await parent.prompt("go")

    assert len(made) == 2
    ((_, text, is_error),) = tool_results(made[1].state.messages)
    assert is_error and "depth limit of 2" in text
    assert tool_results(parent.state.messages) == [("call_1", "up", False)]


async def test_the_depth_is_counted_per_call_in_a_parallel_batch() -> None:
    grandchildren = Children(answering("g"))
    children = Children(
        lambda: [calls(("research", {"task": "g"})), faux.assistant_message("c")],
        tools=(research(grandchildren, max_depth=2),),
    )
    parent = parent_of(
        research(children, max_depth=2),
        calls(("research", {"task": "a"}), ("research", {"task": "b"})),
        faux.assistant_message("ok"),
    )
    await parent.prompt("go")
    assert len(grandchildren.made) == 2  # each child at depth 1, each grandchild at depth 2
    assert tool_results(parent.state.messages) == [("call_1", "c", False), ("call_2", "c", False)]
    assert pt.subagents.subagent_depth() == 0


def test_a_depth_limit_out_of_range_is_refused_where_the_tool_is_made() -> None:
    children = Children(answering())
    for wrong in (0, pt.subagents.MAX_DEPTH_LIMIT + 1):
        with pytest.raises(ValueError, match="max_depth must be 1 to 12"):
            research(children, max_depth=wrong)


async def test_a_failing_child_is_the_call_s_error_result_and_the_parent_goes_on() -> None:
    def broken(tool_call_id: str, params: Any) -> pt.Agent:
        raise RuntimeError("no child today")

    failing = Children(
        lambda: [faux.assistant_message("", stop_reason="error", error_message="model down")]
    )
    parent = make_agent(
        [
            calls(("broken", {"task": "a"}), ("failing", {"task": "b"})),
            faux.assistant_message("ok"),
        ],
        tools=(
            pt.subagent_tool("broken", "Breaks", broken),
            pt.subagent_tool("failing", "Fails", failing),
        ),
    )
    await parent.prompt("go")
    (first, second) = tool_results(parent.state.messages)
    assert first == ("call_1", "Sub-agent broken failed: no child today", True)
    assert second[2] and "model down" in second[1]
    assert parent.state.messages[-1].stop_reason == "stop"
    assert parent.state.error_message is None


def spending(tokens: int, cost: float = 0.0) -> pt.Usage:
    return pt.Usage(total_tokens=tokens, cost=pt.UsageCost(total=cost))


async def test_the_result_s_usage_is_the_child_s_total_grandchildren_included() -> None:
    grandchildren = Children(lambda: [faux.assistant_message("g", usage=spending(7, 0.07))])
    children = Children(
        lambda: [
            faux.assistant_message(
                [faux.tool_call("research", {"task": "g"}, id="g1")], usage=spending(20, 0.2)
            ),
            faux.assistant_message("c", usage=spending(30, 0.3)),
        ],
        tools=(research(grandchildren),),
    )
    parent = parent_of(
        research(children), calls(("research", {"task": "c"})), faux.assistant_message("ok")
    )
    await parent.prompt("go")
    (result,) = [m for m in parent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert result.usage is not None
    assert result.usage.total_tokens == 57
    assert round(result.usage.cost.total, 6) == 0.57


async def test_a_child_stops_once_it_has_spent_the_parent_s_remaining_tokens() -> None:
    children = Children(
        lambda: [
            faux.assistant_message([faux.tool_call("echo", {"text": "x"})], usage=spending(60))
            for _ in range(10)
        ]
    )
    parent = parent_of(
        research(children),
        faux.assistant_message(
            [faux.tool_call("research", {"task": "spend"}, id="call_1")], usage=spending(10)
        ),
        faux.assistant_message("never reached"),
        max_total_tokens=200,
    )
    await parent.prompt("go")

    (child,) = children.made
    child_turns = [m for m in child.state.messages if isinstance(m, pt.AssistantMessage)]
    assert len(child_turns) == 4  # 240 tokens: the turn that passed the parent's 200
    (result,) = [m for m in parent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert result.is_error and result.usage is not None and result.usage.total_tokens == 240
    assert "max_total_tokens=200" in result.content[0].text
    # the parent counts the child's tokens: it stops after that turn (10 + 240 used)
    assert parent.state.error_message is not None
    assert "max_total_tokens=200 reached (250 used)" in parent.state.error_message
    assert parent.state.messages[-1] is result


async def test_children_side_by_side_share_the_parent_s_remainder() -> None:
    children = Children(
        lambda: [
            faux.assistant_message([faux.tool_call("echo", {"text": "x"})], usage=spending(60))
            for _ in range(10)
        ]
    )
    parent = parent_of(
        research(children),
        calls(("research", {"task": "a"}), ("research", {"task": "b"})),
        faux.assistant_message("never reached"),
        max_total_tokens=200,
    )
    await parent.prompt("go")
    turns = [
        len([m for m in child.state.messages if isinstance(m, pt.AssistantMessage)])
        for child in children.made
    ]
    # alone, each would run 4 turns (240 tokens); sharing 200, they stop once the sum passes
    # it, each after the turn it had in flight (budgets are checked between turns)
    assert max(turns) < 4 and sum(turns) <= 4 + 1
    used = 60 * sum(turns)
    assert f"max_total_tokens=200 reached ({used} used)" in (parent.state.error_message or "")


async def test_a_child_s_structured_output_is_the_parent_s_structured_content() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    }

    def child(tool_call_id: str, params: Any) -> pt.Agent:
        script = [
            faux.assistant_message("I think it is Paris."),  # text: nudged to call the tool
            faux.assistant_message(
                [faux.tool_call("final_result", {"city": "Paris", "population": 2102650})]
            ),
        ]
        return make_agent(script, tools=(), output_type=schema)

    parent = parent_of(
        research(child),
        calls(("research", {"task": "largest French city"})),
        faux.assistant_message("done"),
    )
    events = record(parent)
    await parent.prompt("go")
    (end,) = [event for event in events if isinstance(event, pt.ToolExecutionEnd)]
    assert not end.is_error
    assert end.result.structured_content == {"city": "Paris", "population": 2102650}
    assert end.result.content[0].text == '{"city": "Paris", "population": 2102650}'  # type: ignore[union-attr]


async def test_a_child_that_gives_no_structured_output_is_the_call_s_error() -> None:
    def child(tool_call_id: str, params: Any) -> pt.Agent:
        script = [faux.assistant_message("no"), faux.assistant_message("still no")]
        return make_agent(script, tools=(), output_type={"type": "object"}, output_retries=1)

    parent = parent_of(
        research(child), calls(("research", {"task": "x"})), faux.assistant_message("done")
    )
    await parent.prompt("go")
    ((_, text, is_error),) = tool_results(parent.state.messages)
    assert is_error and "gave no structured output" in text and "Structured output failed" in text
