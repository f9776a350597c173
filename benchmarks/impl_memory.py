"""The scenarios S1-S7 on pi_trio's in-memory ``pt.Agent``: the scripted model, one counting
subscriber."""

from __future__ import annotations

import gc
import time
from typing import Any

import trio

from . import _script as script
from ._agents import Counter, scripted_agent
from ._common import s7_schedule, transcript_violations
from ._stress import StressStats, stress_run
from ._tasks import start_tracking

# --- S1 turns ---------------------------------------------------------------------------------


async def s1_turns(turns: int) -> dict[str, Any]:
    counter = Counter()
    agent = scripted_agent(script.scripted(script.noop_answers(turns)), [script.NOOP])
    agent.subscribe(counter.listener())
    start = time.perf_counter()
    await agent.prompt("Go.")
    await agent.wait_for_idle()
    elapsed = time.perf_counter() - start
    return {
        "figures": {
            "us_per_turn": elapsed / (turns + 1) * 1e6,
            "events_per_s": counter.events / elapsed,
        },
        "info": {"events": counter.events, "messages": len(agent.state.messages)},
    }


# --- S2 fanout --------------------------------------------------------------------------------


async def s2_fanout(calls: int, ms: float, max_parallel_tools: int | None = None) -> dict[str, Any]:
    counter = Counter()
    arguments = [{"ms": ms, "cooperative": True}] * calls
    answers = [script.tool_turn("sleep", arguments), script.final_answer()]
    agent = scripted_agent(script.scripted(answers), [script.SLEEP])
    agent.max_parallel_tools = max_parallel_tools
    agent.subscribe(counter.listener())
    start = time.perf_counter()
    await agent.prompt("Go.")
    await agent.wait_for_idle()
    elapsed = time.perf_counter() - start
    return {
        "figures": {"wall_ms": elapsed * 1e3},
        "info": {"events": counter.events, "messages": len(agent.state.messages)},
    }


# --- S3 / S4 abort ----------------------------------------------------------------------------


async def s34_abort(
    calls: int, ms: float, cooperative: bool, abort_after_ms: float
) -> dict[str, Any]:
    tracker = await start_tracking()
    counter = Counter()
    arguments = [{"ms": ms, "cooperative": cooperative}] * calls
    answers = [script.tool_turn("sleep", arguments), script.final_answer()]
    agent = scripted_agent(script.scripted(answers), [script.SLEEP])
    agent.subscribe(counter.listener_watching_tools())
    measured: dict[str, Any] = {}
    aborted_at: list[float] = []
    before = set(tracker.live)

    async def aborter(task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
        task_status.started(trio.lowlevel.current_task())
        await counter.first_tool_start.wait()
        await trio.sleep(abort_after_ms / 1000)
        aborted_at.append(time.perf_counter())
        agent.abort()

    async with trio.open_nursery() as nursery:
        aborter_task = await nursery.start(aborter)
        await agent.prompt("Go.")
        await agent.wait_for_idle()
        if aborted_at:
            measured["abort_to_idle_ms"] = (time.perf_counter() - aborted_at[0]) * 1e3
        leaks = len(tracker.live - before - {aborter_task})
    problems = transcript_violations(script.normalise(list(agent.state.messages)))
    return {
        "figures": measured,
        "checks": {"violations": len(problems), "leaks": leaks},
        "info": {"events": counter.events, "problems": problems[:5]},
    }


# --- S5 many agents ---------------------------------------------------------------------------


async def s5_many_agents(agents: int, turns: int, freeze: bool = False) -> dict[str, Any]:
    """``freeze``: ``gc.freeze()`` once the agents are built (docs/benchmarks.md: a service
    with many agents)."""
    counter = Counter()
    listener = counter.listener()
    crowd = []
    for _ in range(agents):
        agent = scripted_agent(script.scripted(script.lazy_noop_answers(turns)), [script.NOOP])
        agent.subscribe(listener)
        crowd.append(agent)
    if freeze:
        gc.freeze()
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for agent in crowd:
            nursery.start_soon(agent.prompt, "Go.")
    for agent in crowd:
        await agent.wait_for_idle()
    elapsed = time.perf_counter() - start
    return {"figures": {"wall_s": elapsed}, "info": {"events": counter.events}}


# --- S6 stream --------------------------------------------------------------------------------


async def s6_stream(deltas: int) -> dict[str, Any]:
    counter = Counter()
    model = script.scripted([script.final_answer("x" * deltas)], chunker=_in_single_chars)
    agent = scripted_agent(model, [])
    agent.subscribe(counter.listener())
    start = time.perf_counter()
    await agent.prompt("Go.")
    await agent.wait_for_idle()
    elapsed = time.perf_counter() - start
    return {
        "figures": {"events_per_s": counter.events / elapsed},
        "info": {"events": counter.events},
    }


def _in_single_chars(value: str) -> list[str]:
    return list(value)


# --- S7 cancel stress -------------------------------------------------------------------------


async def s7_cancel_stress(runs: int) -> dict[str, Any]:
    tracker = await start_tracking()
    stats = StressStats()
    schedule = s7_schedule(runs)
    start = time.perf_counter()
    for sleeps, abort_at in schedule:
        answers = [
            script.tool_turn("sleep", [{"ms": ms, "cooperative": True} for ms in turn], t)
            for t, turn in enumerate(sleeps)
        ]
        model = script.scripted([*answers, script.final_answer()])
        await stress_run(scripted_agent(model, [script.SLEEP]), abort_at, tracker, stats)
    return stats.result(runs, time.perf_counter() - start)
