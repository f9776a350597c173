"""Thousands of agents in one process: an idle agent is small, and a run leaves little behind
for the garbage collector (issue 19; the S5x benchmark measures the effect)."""

from __future__ import annotations

import collections
import gc

import pi_trio as pt

from .support import make_agent


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
    agent = make_agent([pt.faux.assistant_message("ok")] * 2, ())
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
    agent = make_agent([*answers, pt.faux.assistant_message("done")], [tool])
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


async def test_a_waiting_run_holds_few_objects() -> None:
    # Each of thousands of running agents waits somewhere (here: in its tool), and what its
    # run holds then is paid per agent: no wrapper coroutines around the loop, no closures for
    # the queue polls, no idle Event nobody waits on, no deque for the (nearly always empty)
    # taken messages, no record of the requests when the scripted model keeps none.
    import trio
    import trio.testing

    release = trio.Event()

    async def wait(tool_call_id: str, params: object, on_update: object) -> pt.ToolResult:
        await release.wait()
        return pt.ToolResult([pt.TextContent("ok")])

    tool = pt.AgentTool("wait", "wait", "waits", {"type": "object"}, wait)

    def make() -> pt.Agent:
        answers = [
            pt.faux.assistant_message([pt.faux.tool_call("wait", {}, id="c-1")]),
            pt.faux.assistant_message("done"),
        ]
        scripted = pt.faux.FauxModel(answers, record_calls=False)
        return pt.Agent(pt.AgentState(model=scripted.model, tools=[tool]), stream_fn=scripted)

    # one run first: what the first run of a process loads once (the tracing API's modules,
    # say) is not what each run holds
    warm = pt.faux.FauxModel([pt.faux.assistant_message("warm")], record_calls=False)
    await pt.Agent(pt.AgentState(model=warm.model), stream_fn=warm).prompt("go")
    count = 100
    agents = [make() for _ in range(count)]
    gc.collect()
    gc.disable()
    try:
        async with trio.open_nursery() as nursery:
            before = {id(o) for o in gc.get_objects()}
            for agent in agents:
                nursery.start_soon(agent.prompt, "go")
            await trio.testing.wait_all_tasks_blocked()
            new = collections.Counter(
                type(o).__name__ for o in gc.get_objects() if id(o) not in before
            )
            release.set()
    finally:
        gc.enable()
    assert all(a.state.messages[-1].stop_reason == "stop" for a in agents)  # type: ignore[union-attr]
    assert [a.state.messages[-1] for a in agents if a.state.error_message] == []
    per_agent = {name: n / count for name, n in new.items()}
    assert per_agent.get("deque", 0) == 0
    assert per_agent.get("Event", 0) == 0
    assert per_agent.get("FauxCall", 0) == 0 and per_agent.get("TranscriptView", 0) == 0
    # the tool's progress callback and trio's abort function in Event.wait (5.4 before)
    assert per_agent.get("function", 0) <= 2.5, per_agent
    # prompt and its run, the loop's run, turn loop and tool step, the batch down to the tool
    # and trio's wait; no wrapper around the run or the tool's own coroutine
    assert per_agent.get("coroutine", 0) <= 11, per_agent
    # the one abort() cancels, which the Agent passes the loop (2 before: the loop had its own)
    assert per_agent.get("CancelScope", 0) == 1, per_agent


async def test_an_agent_holds_a_pending_set_only_while_a_tool_runs() -> None:
    # an empty set is 216 bytes: idle agents (and runs between tools) hold none
    seen: list[frozenset[str]] = []

    async def look(tool_call_id: str, params: object, on_update: object) -> pt.ToolResult:
        seen.append(agent.state.pending_tool_calls)
        return pt.ToolResult([pt.TextContent("ok")])

    tool = pt.AgentTool("look", "look", "looks", {"type": "object"}, look)
    answers = [
        pt.faux.assistant_message([pt.faux.tool_call("look", {}, id="c-1")]),
        pt.faux.assistant_message("done"),
    ]
    agent = make_agent(answers, [tool])

    def sets_held() -> int:
        return sum(type(ref) is set for ref in gc.get_referents(agent.state))

    at_turn_end: list[int] = []
    agent.subscribe(
        lambda event: at_turn_end.append(sets_held()) if event.type == "turn_end" else None
    )
    assert sets_held() == 0
    await agent.prompt("go")
    assert seen == [frozenset({"c-1"})]
    assert at_turn_end == [0, 0]  # the tool turn's set went with its last tool
    assert agent.state.pending_tool_calls == frozenset()
    assert sets_held() == 0


def test_transcript_records_have_no_weakref_slot() -> None:
    # A transcript is most of what a running agent holds: the __weakref__ slot cost 16 B per
    # message, tool call and usage record after allocator rounding (~0.7 KiB per agent in S5x)
    names = "AssistantMessage ImageContent TextContent ThinkingContent ToolCall ToolResultMessage"
    records = [getattr(pt, name) for name in f"{names} Usage UsageCost UserMessage".split()]
    assert [cls.__name__ for cls in records if cls.__weakrefoffset__] == []
