"""S7s: S7's shape with every tool call a sub-agent, so each abort cuts through two levels.

Each run is S7's (same schedule: 5 turns x 3 parallel calls, aborted at a random moment), but
the parent's calls are ``pt.subagent_tool`` calls: each starts a child agent that makes S7's
cooperative ``sleep`` call of that length, then answers. The abort hits the parent's run; the
children it cuts are closed by the parent's cancel scope. Counted as S7 counts (abort->idle,
leaked tasks, transcript violations), with every child's transcript checked too (it ends
"aborted", or "stop" when it finished first).
"""

from __future__ import annotations

import time
from typing import Any

import pi_trio as pt

from . import _script as script
from ._agents import scripted_agent
from ._common import s7_schedule, transcript_violations
from ._stress import StressStats, stress_run
from ._tasks import start_tracking

_PARAMETERS = {
    "type": "object",
    "properties": {"ms": {"type": "number", "minimum": 0}},
    "required": ["ms"],
}


def _delegate(children: list[pt.Agent]) -> pt.AgentTool:
    """The parent's tool: a child agent that sleeps ``ms`` (S7's tool call), then answers."""

    def child(tool_call_id: str, params: Any) -> pt.Agent:
        turn = script.tool_turn("sleep", [{"ms": params["ms"], "cooperative": True}])
        agent = scripted_agent(script.scripted([turn, script.final_answer()]), [script.SLEEP])
        children.append(agent)
        return agent

    return pt.subagent_tool(
        "delegate",
        "Hands a wait to a sub-agent",
        child,
        parameters=_PARAMETERS,
        task_of=lambda params: f"Sleep {params['ms']} ms.",
    )


def _run(sleeps: list[list[float]], children: list[pt.Agent]) -> tuple[pt.Agent]:
    """A parent agent for one S7 run whose calls are sub-agents (kept in ``children``)."""
    answers = [
        script.tool_turn("delegate", [{"ms": ms} for ms in turn], t)
        for t, turn in enumerate(sleeps)
    ]
    model = script.scripted([*answers, script.final_answer()])
    return (scripted_agent(model, [_delegate(children)]),)


async def s7s_subagents(runs: int) -> dict[str, Any]:
    tracker = await start_tracking()
    # one uncounted run first: the wire converter's one-time set-up per event type (~60 ms)
    # is not an abort's cost
    await stress_run(*_run(s7_schedule(1)[0][0], []), 1e9, tracker, StressStats())
    stats = StressStats()
    children_checked = 0
    start = time.perf_counter()
    for sleeps, abort_at in s7_schedule(runs):
        children: list[pt.Agent] = []
        await stress_run(*_run(sleeps, children), abort_at, tracker, stats)
        for child in children:
            transcript = script.normalise(list(child.state.messages))
            problems = transcript_violations(transcript, allowed_last=("aborted", "stop"))
            if problems or child.state.is_streaming:
                stats.violations += 1
                stats.problems.extend(problems or ["a child still streaming"])
        children_checked += len(children)
    result = stats.result(runs, time.perf_counter() - start)
    result["info"]["children"] = children_checked
    return result
