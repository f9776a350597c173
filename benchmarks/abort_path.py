"""Where an abort's time goes: S7's abort->idle window cut into steps; runs in a few seconds.

    .venv/bin/python -m benchmarks.abort_path [--runs 600] [--gc]

Each run is a prompt whose third turn calls three cooperative ``sleep(10 s)`` tools; once they
are all parked, a timer task calls ``abort()`` (as S7's does) and the prompt's own task measures
until ``prompt()`` and ``wait_for_idle()`` are back. The steps are timestamps taken on the way
(no library code is changed: the tool, ``closing_events`` and ``Emitter.close`` are wrapped):
``abort()`` -> the first tool sees its ``Cancelled`` -> the last one does -> the close-out
starts -> its events are built and applied -> delivered -> idle. The floor (``impl_floor``)
runs the same plan for its total. Medians over the runs (the first 50 left out), garbage
collection off unless ``--gc``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections import defaultdict
from typing import Any

import trio
import trio.testing

import pi_trio as pt
import pi_trio.loop._run as run_module
from pi_trio.loop._emit import Emitter

from . import _script as script
from . import impl_floor as floor
from ._agents import Counter, scripted_agent

STAMPS: list[tuple[str, int]] = []


def _stamp(name: str) -> None:
    STAMPS.append((name, time.perf_counter_ns()))


async def _sleep(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    try:
        await trio.sleep(params["ms"] / 1000)
    except trio.Cancelled:
        _stamp("tool cancelled")
        raise
    return pt.ToolResult([pt.TextContent("ok")])


SLEEP = pt.AgentTool(
    name="sleep",
    label="sleep",
    description=script.SLEEP.description,
    parameters=script.SLEEP.parameters,
    execute=_sleep,
)


def _wrap_close_out() -> None:
    closing_events, close = run_module.closing_events, Emitter.close

    def timed_closing_events(*args: Any) -> Any:
        _stamp("close-out starts")
        events = closing_events(*args)
        _stamp("closing events built")
        return events

    async def timed_close(emitter: Emitter, events: Any) -> None:
        await close(emitter, events)
        _stamp("close-out delivered")

    run_module.closing_events = timed_closing_events
    Emitter.close = timed_close  # type: ignore[method-assign]


def _plan(turns_before: int) -> list[pt.AssistantMessage]:
    answers = [
        script.tool_turn(
            "sleep", [{"ms": 0 if t < turns_before else 10_000, "cooperative": True}] * 3, t
        )
        for t in range(turns_before + 1)
    ]
    return [*answers, script.final_answer()]


async def _one_pi_trio(steps: dict[str, list[float]]) -> float:
    agent = scripted_agent(script.scripted(_plan(2)), [SLEEP])
    agent.subscribe(Counter().listener())
    async with trio.open_nursery() as nursery:

        async def aborter() -> None:
            await trio.testing.wait_all_tasks_blocked(0.0002)
            STAMPS.clear()
            _stamp("abort()")
            agent.abort()

        nursery.start_soon(aborter)
        await agent.prompt("Go.")
        await agent.wait_for_idle()
        _stamp("idle")
    seen: dict[str, int] = defaultdict(int)
    previous = STAMPS[0][1]
    for name, at in STAMPS[1:]:
        seen[name] += 1
        label = name if name != "tool cancelled" else f"tool {seen[name]} cancelled"
        steps[label].append((at - previous) / 1000)
        previous = at
    return (STAMPS[-1][1] - STAMPS[0][1]) / 1000


async def _one_floor() -> float:
    run = floor.Run(floor.Sink())
    scope = trio.CancelScope()
    plan = [[floor.sleeper(0 if t < 2 else 10_000) for _ in range(3)] for t in range(3)]
    landed: list[int] = []
    async with trio.open_nursery() as nursery:

        async def aborter() -> None:
            await trio.testing.wait_all_tasks_blocked(0.0002)
            landed.append(time.perf_counter_ns())
            scope.cancel()

        nursery.start_soon(aborter)
        await run.run_abortable(plan, scope)
        idle = time.perf_counter_ns()
    return (idle - landed[0]) / 1000


async def main(runs: int) -> None:
    _wrap_close_out()
    steps: dict[str, list[float]] = defaultdict(list)
    totals = [await _one_pi_trio(steps) for _ in range(runs)][50:]
    floor_totals = [await _one_floor() for _ in range(runs)][50:]
    print(f"abort->idle, median of {len(totals)} runs (µs):")
    print(f"  pi_trio {statistics.median(totals):8.1f}")
    print(f"  floor   {statistics.median(floor_totals):8.1f}")
    print("pi_trio's steps (median µs since the step before):")
    for label, values in steps.items():
        print(f"  {label:24s} {statistics.median(values[50:]):8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--gc", action="store_true", help="leave garbage collection on")
    args = parser.parse_args()
    if not args.gc:
        gc.disable()
    trio.run(main, args.runs)
