"""Every ``compaction_start`` is followed by its ``compaction_end``, also when the start's own
delivery is cut short: an abort while a listener holds it, a listener that raises on it, a
manual ``compact()`` aborted there. (A UI showing "compacting..." never stays stuck.)"""

from __future__ import annotations

import itertools

import attrs
import trio
import trio.testing

import pi_trio as pt
from pi_trio.testing import check_events

from .support import READ, ReadingModel, make_scripted_agent

faux = pt.faux
SETTINGS = pt.Compaction(reserve_tokens=500, keep_recent_tokens=1_000)


def compacting_agent() -> pt.Agent:
    small = attrs.evolve(pt.get_model("faux", "faux-1"), context_window=4_000)
    scripted = faux.FauxModel(itertools.repeat(ReadingModel(turns=12)), model=small)
    agent, _ = make_scripted_agent(scripted, (READ,), compaction=SETTINGS)
    return agent


def holding_compaction_start(agent: pt.Agent) -> list[pt.AgentEvent]:
    """Subscribe a listener that holds ``compaction_start`` for good; the events it saw."""
    events: list[pt.AgentEvent] = []

    async def slow_on_start(event: pt.AgentEvent) -> None:
        events.append(event)
        if isinstance(event, pt.CompactionStart):
            await trio.sleep_forever()

    agent.subscribe(slow_on_start)
    return events


def types(events: list[pt.AgentEvent]) -> list[str]:
    return [event.type for event in events]


async def test_an_abort_while_a_listener_holds_compaction_start() -> None:
    agent = compacting_agent()
    events = holding_compaction_start(agent)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "read the files")
        while not any(isinstance(e, pt.CompactionStart) for e in events):
            await trio.testing.wait_all_tasks_blocked()
        agent.abort()
    seen = types(events)
    assert seen.count("compaction_start") == seen.count("compaction_end") == 1
    end = next(e for e in events if isinstance(e, pt.CompactionEnd))
    assert end.aborted and end.summary is None
    assert check_events(events) == []
    assert agent.state.messages[-1].stop_reason == "aborted"


async def test_a_listener_raising_on_compaction_start() -> None:
    agent = compacting_agent()
    events: list[pt.AgentEvent] = []

    def breaks_on_start(event: pt.AgentEvent) -> None:
        events.append(event)
        if isinstance(event, pt.CompactionStart):
            raise RuntimeError("the UI broke")

    agent.subscribe(breaks_on_start)
    await agent.prompt("read the files")
    seen = types(events)
    assert seen.count("compaction_start") == seen.count("compaction_end") == 1
    assert check_events(events) == []
    assert "the UI broke" in (agent.state.error_message or "")


async def test_a_manual_compaction_aborted_at_its_start() -> None:
    agent = compacting_agent()
    await agent.prompt("read the files")
    events = holding_compaction_start(agent)
    results = []

    async def compact() -> None:
        results.append(await agent.compact())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(compact)
        while not events:
            await trio.testing.wait_all_tasks_blocked()
        agent.abort()
    assert types(events) == ["compaction_start", "compaction_end"]
    assert results == [None]


def test_the_grammar_check_pairs_compaction_events() -> None:
    start, end = pt.CompactionStart("threshold"), pt.CompactionEnd(None, 10, reason="threshold")
    turn = [pt.AgentStart(), pt.TurnStart()]
    close = [pt.TurnEnd(faux.assistant_message("x"), []), pt.AgentEnd([])]
    assert check_events([*turn, start, end, *close]) == []
    assert "the turn ended with a compaction open" in " ".join(check_events([*turn, start, *close]))
    assert "ended that never started" in " ".join(check_events([*turn, end, *close]))
    assert "inside an open one" in " ".join(check_events([*turn, start, start, end, *close]))
