"""The scenarios on pi_trio: ``pt.Agent`` with the scripted model and one counting subscriber."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux

from . import _script as script
from ._common import median, peak_rss_mib, percentile, s7_schedule, transcript_violations
from ._tasks import TaskTracker, start_tracking


class Counter:
    """The one subscriber: counts events (a plain function, so nothing is awaited)."""

    def __init__(self) -> None:
        self.events = 0
        self.first_tool_start = trio.Event()

    def listener(self) -> Callable[[Any], None]:
        def on_event(event: Any) -> None:
            self.events += 1

        return on_event

    def listener_watching_tools(self) -> Callable[[Any], None]:
        started = self.first_tool_start

        def on_event(event: Any) -> None:
            self.events += 1
            if event.type == "tool_execution_start" and not started.is_set():
                started.set()

        return on_event


def make_agent(model: pt.Model, tools: list[pt.AgentTool], **options: Any) -> pt.Agent:
    state = pt.AgentState(model=model, tools=tools)
    return pt.Agent(state, **options)


def scripted_agent(scripted: faux.FauxModel, tools: list[pt.AgentTool]) -> pt.Agent:
    return make_agent(scripted.model, tools, stream_fn=scripted)


def _noop_answers(turns: int) -> list[pt.AssistantMessage]:
    answers = [script.tool_turn("noop", [{}], turn) for turn in range(turns)]
    return [*answers, script.final_answer()]


def _lazy_noop_answers(turns: int) -> Iterator[pt.AssistantMessage]:
    """S5's answers, each built when the agent's model is called (as the Node reference builds
    its message from a small descriptor at call time): 1,000-10,000 agents do not each hold
    eleven prebuilt messages from the start."""
    for turn in range(turns):
        yield script.tool_turn("noop", [{}], turn)
    yield script.final_answer()


# --- S1 turns ---------------------------------------------------------------------------------


async def s1_turns(turns: int) -> dict[str, Any]:
    counter = Counter()
    agent = scripted_agent(script.scripted(_noop_answers(turns)), [script.NOOP])
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
        agent = scripted_agent(script.scripted(_lazy_noop_answers(turns)), [script.NOOP])
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


class StressStats:
    """What S7 (and its HTTP variant) count over all runs."""

    def __init__(self) -> None:
        self.abort_to_idle_us: list[float] = []
        self.abort_to_idle_cpu_us: list[float] = []
        self.violations = 0
        self.leaks = 0
        self.mid_run = 0
        self.finished_first = 0
        self.problems: list[str] = []
        self.events = 0

    def result(self, runs: int, elapsed: float) -> dict[str, Any]:
        return {
            "figures": {
                "runs_per_s": runs / elapsed,
                "abort_idle_median_us": median(self.abort_to_idle_us),
                "abort_idle_p99_us": percentile(self.abort_to_idle_us, 99),
                "abort_idle_p99_cpu_us": percentile(self.abort_to_idle_cpu_us, 99),
                "mid_run_aborts": self.mid_run,
            },
            "checks": {"violations": self.violations, "leaks": self.leaks},
            "info": {
                "runs": runs,
                "finished_first": self.finished_first,
                "events": self.events,
                "problems": self.problems[:5],
            },
        }


async def stress_run(
    agent: pt.Agent, abort_at_ms: float, tracker: TaskTracker, stats: StressStats
) -> None:
    """One S7 run: prompt, abort at ``abort_at_ms`` (armed right before the prompt), check.

    The timer task only notes the time and calls ``abort()``; idle is when the prompt's caller
    is back from ``wait_for_idle()`` (all in one thread, so the CPU clock spans both tasks).
    """
    counter = Counter()
    agent.subscribe(counter.listener())
    landed: dict[str, Any] = {}
    before = set(tracker.live)

    async def aborter(task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
        task_status.started(trio.lowlevel.current_task())
        await trio.sleep(abort_at_ms / 1000)
        landed["mid_run"] = bool(agent.state.is_streaming)
        landed["at"], landed["cpu"] = time.perf_counter_ns(), time.thread_time_ns()
        agent.abort()

    async with trio.open_nursery() as nursery:
        aborter_task = await nursery.start(aborter)
        await agent.prompt("Go.")
        await agent.wait_for_idle()
        idle, cpu = time.perf_counter_ns(), time.thread_time_ns()
        stats.leaks += len(tracker.live - before - {aborter_task})
        if not landed:  # finished before its abort: disarm it
            nursery.cancel_scope.cancel()
    stats.events += counter.events
    mid_run = landed.get("mid_run", False)
    if mid_run:
        stats.abort_to_idle_us.append((idle - landed["at"]) / 1000)
        stats.abort_to_idle_cpu_us.append((cpu - landed["cpu"]) / 1000)
        stats.mid_run += 1
    else:
        stats.finished_first += 1
    allowed = ("aborted", "stop") if mid_run else ("stop",)
    transcript = script.normalise(list(agent.state.messages))
    problems = transcript_violations(transcript, allowed_last=allowed)
    if problems:
        stats.violations += 1
        stats.problems.extend(problems)


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


# --- entry ------------------------------------------------------------------------------------


def run_scenario(params: dict[str, Any]) -> dict[str, Any]:
    params = dict(params)
    scenario = params.pop("scenario")
    if scenario == "S7h":
        from ._s7_http import s7_http

        result = trio.run(lambda: s7_http(**params))
    elif scenario == "S9":
        from .impl_serve import s9_serve

        result = trio.run(lambda: s9_serve(**params))
    elif scenario in ("S1d", "S5d", "S8"):
        from . import impl_sessions

        durable = {"S1d": impl_sessions.s1d_turns, "S5d": impl_sessions.s5d_many_agents,
                   "S8": impl_sessions.s8_resume}[scenario]  # fmt: skip
        result = trio.run(lambda: durable(**params))
    else:
        functions: dict[str, Callable[..., Coroutine[Any, Any, dict[str, Any]]]] = {
            "S1": s1_turns,
            "S2": s2_fanout,
            "S2b": s2_fanout,
            "S3": s34_abort,
            "S4": s34_abort,
            "S5": s5_many_agents,
            "S6": s6_stream,
            "S7": s7_cancel_stress,
        }
        function = functions[scenario]
        result = trio.run(lambda: function(**params))
    result.setdefault("checks", {})
    result["figures"]["peak_rss_mib"] = peak_rss_mib()
    return result
