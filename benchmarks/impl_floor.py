"""The bare-Trio floor: each scenario's irreducible Trio work, with no framework.

Same events as pi_trio sends (by name: pi's event grammar), each dispatched by a direct awaited
call to a counting function; the same tool sleeps, in a nursery when a turn has more than one
call; one cancel scope per run as the abort; a minimal transcript (one small dict per message)
closed in pi's aborted shape after an abort. Nothing is validated, built or copied beyond that,
so this is a lower bound, not a competitor. It imports trio and nothing of pi_trio.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from typing import Any

import trio

from ._common import median, peak_rss_mib, percentile, s7_schedule, transcript_violations
from ._tasks import TaskTracker, start_tracking

TEXT_PIECES = 8
Tool = Callable[[], Coroutine[Any, Any, object]]
_OK = object()


class Sink:
    """The one subscriber: counts events."""

    __slots__ = ("events", "first_tool_start")

    def __init__(self) -> None:
        self.events = 0
        self.first_tool_start: trio.Event | None = None

    async def emit(self, event: str) -> None:
        self.events += 1
        if event == "tool_execution_start" and self.first_tool_start is not None:
            self.first_tool_start.set()


async def noop() -> object:
    return _OK


def sleeper(ms: float) -> Tool:
    async def sleep() -> object:
        await trio.sleep(ms / 1000)
        return _OK

    return sleep


class Run:
    """One agent run: the transcript and the calls still waiting for a result."""

    __slots__ = ("ended", "ids", "pending", "sink", "transcript")

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.transcript: list[dict[str, Any]] = []
        self.pending: list[str] = []
        self.ids = 0
        self.ended = False

    async def assistant(self, calls: int, stop_reason: str) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()  # an aborted run never calls the model
        emit = self.sink.emit
        await emit("message_start")
        await emit("message_update")  # text_start
        for _ in range(TEXT_PIECES):
            await emit("message_update")  # text_delta
        await emit("message_update")  # text_end
        ids = []
        for _ in range(calls):
            self.ids += 1
            ids.append(f"call_{self.ids}")
            await emit("message_update")  # toolcall_start
            await emit("message_update")  # toolcall_delta
            await emit("message_update")  # toolcall_end
        self.transcript.append({"role": "assistant", "stopReason": stop_reason, "toolCalls": ids})
        self.pending = ids
        await emit("message_end")

    async def tools(self, tools: list[Tool]) -> None:
        emit = self.sink.emit
        done: list[bool] = [False] * len(tools)
        for _ in tools:
            await emit("tool_execution_start")

        async def execute(index: int, tool: Tool) -> None:
            await tool()
            done[index] = True
            await emit("tool_execution_end")

        if len(tools) == 1:
            await execute(0, tools[0])
        else:
            async with trio.open_nursery() as nursery:
                for index, tool in enumerate(tools):
                    nursery.start_soon(execute, index, tool)
        for call_id in self.pending:
            self.transcript.append({"role": "toolResult", "toolCallId": call_id})
            await emit("message_start")
            await emit("message_end")
        self.pending = []

    async def run(self, turns: list[list[Tool]]) -> None:
        """A prompt, one turn per item of ``turns`` (its tool calls), then a final text."""
        emit = self.sink.emit
        self.transcript.append({"role": "user"})
        await emit("agent_start")
        await emit("turn_start")
        await emit("message_start")
        await emit("message_end")
        for index, tools in enumerate(turns):
            if index:
                await emit("turn_start")
            await self.assistant(len(tools), "toolUse")
            await self.tools(tools)
            await emit("turn_end")
        if turns:
            await emit("turn_start")
        await self.assistant(0, "stop")
        await emit("turn_end")
        self.ended = True
        await emit("agent_end")

    async def run_abortable(self, turns: list[list[Tool]], scope: trio.CancelScope) -> None:
        with scope:
            await self.run(turns)
        if not self.ended:
            await self.close_aborted()

    async def close_aborted(self) -> None:
        """Complete the transcript in pi's aborted shape and send the closing events."""
        emit = self.sink.emit
        for call_id in self.pending:
            self.transcript.append({"role": "toolResult", "toolCallId": call_id})
        closing = 3 * len(self.pending) + 5  # per call: end, message_start/end; then the rest
        self.pending = []
        self.transcript.append({"role": "assistant", "stopReason": "aborted", "toolCalls": []})
        self.ended = True
        for _ in range(closing):
            await emit("closing")


# --- the scenarios ----------------------------------------------------------------------------


async def s1_turns(turns: int) -> dict[str, Any]:
    sink = Sink()
    run = Run(sink)
    plan: list[list[Tool]] = [[noop] for _ in range(turns)]
    start = time.perf_counter()
    await run.run(plan)
    elapsed = time.perf_counter() - start
    return {
        "figures": {
            "us_per_turn": elapsed / (turns + 1) * 1e6,
            "events_per_s": sink.events / elapsed,
        },
        "info": {"events": sink.events, "messages": len(run.transcript)},
    }


async def s2_fanout(calls: int, ms: float) -> dict[str, Any]:
    sink = Sink()
    run = Run(sink)
    plan = [[sleeper(ms) for _ in range(calls)]]
    start = time.perf_counter()
    await run.run(plan)
    elapsed = time.perf_counter() - start
    return {
        "figures": {"wall_ms": elapsed * 1e3},
        "info": {"events": sink.events, "messages": len(run.transcript)},
    }


async def s34_abort(
    calls: int, ms: float, cooperative: bool, abort_after_ms: float
) -> dict[str, Any]:
    tracker = await start_tracking()
    sink = Sink()
    sink.first_tool_start = trio.Event()
    run = Run(sink)
    plan = [[sleeper(ms) for _ in range(calls)]]
    scope = trio.CancelScope()
    measured: dict[str, float] = {}
    aborted_at: list[float] = []
    before = set(tracker.live)

    async def aborter(task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
        task_status.started(trio.lowlevel.current_task())
        assert sink.first_tool_start is not None
        await sink.first_tool_start.wait()
        await trio.sleep(abort_after_ms / 1000)
        aborted_at.append(time.perf_counter())
        scope.cancel()

    async with trio.open_nursery() as nursery:
        aborter_task = await nursery.start(aborter)
        await run.run_abortable(plan, scope)
        if aborted_at:
            measured["abort_to_idle_ms"] = (time.perf_counter() - aborted_at[0]) * 1e3
        leaks = len(tracker.live - before - {aborter_task})
    problems = transcript_violations(run.transcript)
    return {
        "figures": measured,
        "checks": {"violations": len(problems), "leaks": leaks},
        "info": {"events": sink.events, "problems": problems[:5]},
    }


async def s5_many_agents(agents: int, turns: int) -> dict[str, Any]:
    sink = Sink()
    runs = [Run(sink) for _ in range(agents)]
    plans = [[[noop] for _ in range(turns)] for _ in range(agents)]
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for run, plan in zip(runs, plans, strict=True):
            nursery.start_soon(run.run, plan)
    elapsed = time.perf_counter() - start
    return {"figures": {"wall_s": elapsed}, "info": {"events": sink.events}}


async def s6_stream(deltas: int) -> dict[str, Any]:
    sink = Sink()
    emit = sink.emit
    transcript: list[dict[str, Any]] = []
    start = time.perf_counter()
    transcript.append({"role": "user"})
    for event in ("agent_start", "turn_start", "message_start", "message_end"):
        await emit(event)
    await trio.lowlevel.checkpoint_if_cancelled()
    await emit("message_start")
    await emit("message_update")  # text_start
    for _ in range(deltas):
        await emit("message_update")
    await emit("message_update")  # text_end
    transcript.append({"role": "assistant", "stopReason": "stop", "toolCalls": []})
    for event in ("message_end", "turn_end", "agent_end"):
        await emit(event)
    elapsed = time.perf_counter() - start
    return {"figures": {"events_per_s": sink.events / elapsed}, "info": {"events": sink.events}}


async def s7_cancel_stress(runs: int) -> dict[str, Any]:
    tracker = await start_tracking()
    abort_to_idle: list[float] = []
    abort_to_idle_cpu: list[float] = []
    violations = leaks = mid_runs = 0
    problems: list[str] = []
    sink = Sink()
    start = time.perf_counter()
    for sleeps, abort_at in s7_schedule(runs):
        run = Run(sink)
        plan = [[sleeper(ms) for ms in turn] for turn in sleeps]
        scope = trio.CancelScope()
        landed: dict[str, Any] = {}
        before = set(tracker.live)

        async def aborter(
            task_status: trio.TaskStatus[trio.lowlevel.Task],
            run: Run = run,
            scope: trio.CancelScope = scope,
            abort_at: float = abort_at,
            landed: dict[str, Any] = landed,
        ) -> None:
            task_status.started(trio.lowlevel.current_task())
            await trio.sleep(abort_at / 1000)
            landed["mid_run"] = not run.ended
            landed["at"], landed["cpu"] = time.perf_counter_ns(), time.thread_time_ns()
            scope.cancel()

        async with trio.open_nursery() as nursery:
            aborter_task = await nursery.start(aborter)
            await run.run_abortable(plan, scope)
            idle, cpu = time.perf_counter_ns(), time.thread_time_ns()
            leaks += len(tracker.live - before - {aborter_task})
            if not landed:
                nursery.cancel_scope.cancel()
        mid_run = landed.get("mid_run", False)
        if mid_run:
            abort_to_idle.append((idle - landed["at"]) / 1000)
            abort_to_idle_cpu.append((cpu - landed["cpu"]) / 1000)
        mid_runs += mid_run
        allowed = ("aborted", "stop") if mid_run else ("stop",)
        found = transcript_violations(run.transcript, allowed_last=allowed)
        if found:
            violations += 1
            problems += found
    elapsed = time.perf_counter() - start
    return {
        "figures": {
            "runs_per_s": runs / elapsed,
            "abort_idle_median_us": median(abort_to_idle),
            "abort_idle_p99_us": percentile(abort_to_idle, 99),
            "abort_idle_p99_cpu_us": percentile(abort_to_idle_cpu, 99),
            "mid_run_aborts": mid_runs,
        },
        "checks": {"violations": violations, "leaks": leaks},
        "info": {"runs": runs, "finished_first": runs - mid_runs, "problems": problems[:5]},
    }


def run_scenario(params: dict[str, Any]) -> dict[str, Any]:
    params = dict(params)
    functions: dict[str, Callable[..., Coroutine[Any, Any, dict[str, Any]]]] = {
        "S1": s1_turns,
        "S2": s2_fanout,
        "S3": s34_abort,
        "S4": s34_abort,
        "S5": s5_many_agents,
        "S6": s6_stream,
        "S7": s7_cancel_stress,
    }
    function = functions[params.pop("scenario")]
    result: dict[str, Any] = trio.run(lambda: function(**params))
    result.setdefault("checks", {})
    result["figures"]["peak_rss_mib"] = peak_rss_mib()
    return result


__all__ = ["TaskTracker", "run_scenario"]
