"""Thousands of agents in one process: an idle agent is small, and a run leaves little behind
for the garbage collector (issue 19; the S5x benchmark measures the effect)."""

from __future__ import annotations

import gc

import pi_trio as pt


def _tracked_per_agent(make: object, count: int = 200) -> float:
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        before = len(gc.get_objects())
        agents = [make() for _ in range(count)]  # type: ignore[operator]
        after = len(gc.get_objects())
    finally:
        if was_enabled:
            gc.enable()
    assert len(agents) == count
    return (after - before - 1) / count  # the list itself


def test_an_idle_agent_tracks_few_objects() -> None:
    # No queue, channel or counter exists until something is queued or subscribed: an idle
    # agent is its state, its settings and its (empty) lists.
    scripted = pt.faux.FauxModel([])
    state = pt.AgentState(model=scripted.model)
    assert _tracked_per_agent(lambda: pt.Agent(state, stream_fn=scripted)) <= 16


async def test_queues_work_once_made_on_the_first_put() -> None:
    scripted = pt.faux.FauxModel([pt.faux.assistant_message("ok")] * 2)
    agent = pt.Agent(pt.AgentState(model=scripted.model), stream_fn=scripted)
    assert not agent.has_queued_messages() and agent.queued() == ()
    first = agent.follow_up("one")
    second = agent.steer("two")
    assert (first.id, second.id) == ("follow_up-1", "steer-2")
    assert [item.id for item in agent.queued()] == ["steer-2", "follow_up-1"]
    await agent.prompt("go")
    assert not agent.has_queued_messages()
    texts = [m.content[0].text for m in agent.state.messages if m.role == "user"]  # type: ignore[union-attr]
    assert texts == ["go", "two", "one"]


async def test_nothing_of_a_finished_batch_waits_through_the_next_turn() -> None:
    # With thousands of agents between one agent's turns, whatever a turn leaves referenced
    # is promoted to the oldest generation and makes full collections come sooner.
    from pi_trio.tools import ToolBatch

    async def noop(tool_call_id: str, params: object, on_update: object) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent("ok")])

    tool = pt.AgentTool("noop", "noop", "does nothing", {"type": "object"}, noop)
    answers = [
        pt.faux.assistant_message([pt.faux.tool_call("noop", {}, id=f"c-many-{i}")])
        for i in range(3)
    ]
    scripted = pt.faux.FauxModel([*answers, pt.faux.assistant_message("done")])
    agent = pt.Agent(pt.AgentState(model=scripted.model, tools=[tool]), stream_fn=scripted)
    alive_at_turn_start: list[int] = []

    def ours() -> list[ToolBatch]:  # other tests may have left garbage batches behind
        return [
            o
            for o in gc.get_objects()
            if type(o) is ToolBatch and o.calls[0].id.startswith("c-many-")
        ]

    def on_event(event: pt.AgentEvent) -> None:
        if event.type == "turn_start":
            alive_at_turn_start.append(len(ours()))

    agent.subscribe(on_event)
    gc.collect()
    assert ours() == []
    gc.disable()
    try:
        await agent.prompt("go")
    finally:
        gc.enable()
    assert agent.state.messages[-1].stop_reason == "stop"  # type: ignore[union-attr]
    assert alive_at_turn_start == [0, 0, 0, 0]
