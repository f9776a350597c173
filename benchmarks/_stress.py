"""One S7 run (prompt, abort at a given moment, check) and what S7 and S7h count over all runs."""

from __future__ import annotations

import time
from typing import Any

import trio

import pi_trio as pt

from . import _script as script
from ._agents import Counter
from ._common import median, percentile, transcript_violations
from ._tasks import TaskTracker


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
