"""S10: a 1,000-turn session with compaction beside the same session without it.

The scripted model reports a context size that grows with the transcript (about 110 tokens a
message, O(1) per request) and answers a request without tools (a summary request) with a short
summary. Per-turn wall time is measured over the first and the last tenth of the turns: with
compaction on, the last tenth costs about what the first did (the transcript stays bounded; the
summaries' cost is counted in the turns that made them).
"""

from __future__ import annotations

import time
from typing import Any

import attrs

import pi_trio as pt

from . import _script as script

_RESULT = pt.ToolResult([pt.TextContent("r" * 400)], details={})


async def _read(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return _RESULT


READ = pt.AgentTool("read", "read", "reads", {"type": "object"}, _read)


class _Model:
    """Tool turns for ``turns`` turns, then a final answer; summaries for tool-less requests."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.turn = 0
        self.summaries = 0

    def __call__(self, context: pt.Context, options: Any, index: int) -> pt.AssistantMessage:
        tokens = 110 * len(context.messages)
        usage = pt.Usage(input=tokens, output=10, total_tokens=tokens + 10)
        if not context.tools:
            self.summaries += 1
            return pt.faux.assistant_message(f"summary {self.summaries}", usage=usage)
        self.turn += 1
        if self.turn > self.turns:
            return pt.faux.assistant_message(script.FINAL_TEXT, usage=usage)
        answer = script.tool_turn("read", [{}], self.turn)
        answer.usage = usage
        return answer


async def _session(turns: int, compaction: pt.Compaction | None) -> tuple[list[float], int, int]:
    """Turn end times, compactions and the final transcript's length."""
    model = _Model(turns)
    window = attrs.evolve(pt.get_model("faux", "faux-1"), context_window=20_000)
    scripted = pt.faux.FauxModel(_repeat(model), model=window, record_calls=False)
    agent = pt.Agent(
        pt.AgentState(model=window, tools=[READ]), stream_fn=scripted, compaction=compaction
    )
    ends: list[float] = []

    def listener(event: pt.AgentEvent) -> None:
        if type(event) is pt.TurnEnd:
            ends.append(time.perf_counter())

    agent.subscribe(listener)
    ends.append(time.perf_counter())
    await agent.prompt("Go.")
    return ends, model.summaries, len(agent.state.messages)


def _repeat(step: Any) -> Any:
    while True:
        yield step


def _per_turn_us(ends: list[float], first: bool) -> float:
    tenth = max(1, (len(ends) - 1) // 10)
    part = ends[: tenth + 1] if first else ends[-tenth - 1 :]
    return (part[-1] - part[0]) / tenth * 1e6


async def s10_compaction(turns: int) -> dict[str, Any]:
    settings = pt.Compaction(reserve_tokens=2_000, keep_recent_tokens=5_000)
    await _session(max(10, turns // 10), settings)  # warm up: neither session pays for it
    plain, _, plain_length = await _session(turns, None)
    compacted, summaries, length = await _session(turns, settings)
    first, last = _per_turn_us(compacted, True), _per_turn_us(compacted, False)
    plain_first, plain_last = _per_turn_us(plain, True), _per_turn_us(plain, False)
    return {
        "figures": {
            "first_us_per_turn": first,
            "last_us_per_turn": last,
            "last_to_first": last / first,
            "plain_first_us_per_turn": plain_first,
            "plain_last_us_per_turn": plain_last,
            "compactions": summaries,
        },
        "info": {"messages": length, "plain_messages": plain_length},
    }
