"""pi's recorded scenarios, replayed through ``pt.run_agent_loop``: same events, same transcript.

The fixtures were recorded through pi's ``Agent``, whose events are exactly its loop's; the
Agent-only scenarios (busy errors, queues, continue rules) are replayed in test_agent_fixtures.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from .pi_fixtures import fixture_params, load
from .replay import (
    SCRIPTED_MODEL,
    SYSTEM_PROMPT,
    fixture_hooks,
    fixture_tools,
    initial_messages,
    prompt_messages,
    script_steps,
)
from .support import RecordingSink, strip_timestamps
from .transcript import assert_transcript_valid

LOOP_FIXTURES = [
    "O01", "O01b", "O02", "O03", "O04", "O05", "O06", "O07", "O07b", "O08", "O09a", "O09b",
    "O09c", "O10", "O10b", "O11a", "O11b", "O16a", "O17", "O17b", "O20", "O21", "O22",
]  # fmt: skip


async def replay(name: str) -> tuple[dict[str, Any], RecordingSink, pt.AgentContext, Any]:
    data = load(name)
    scripted = faux.FauxModel(script_steps(data), model=SCRIPTED_MODEL)
    config = pt.AgentLoopConfig(
        model=SCRIPTED_MODEL,
        stream_fn=scripted,
        tool_execution="sequential"
        if data["config"]["toolExecution"] == "sequential"
        else "parallel",
        **fixture_hooks(name),
    )
    context = pt.AgentContext(SYSTEM_PROMPT, initial_messages(data), fixture_tools(data))
    sink = RecordingSink()
    if data["operations"][0]["op"] == "continue":
        await pt.run_agent_loop_continue(context, config, sink)
    else:
        await pt.run_agent_loop(prompt_messages(name), context, config, sink)
    return data, sink, context, scripted


@pytest.mark.parametrize("name", fixture_params(LOOP_FIXTURES))
async def test_replay_matches_pi(name: str, autojump_clock: trio.testing.MockClock) -> None:
    data, sink, context, _ = await replay(name)
    assert sink.types == [e["type"] for e in data["events"]]
    assert strip_timestamps(sink.json) == strip_timestamps(data["events"])
    final = [pt.to_json(m) for m in context.messages]
    assert strip_timestamps(final) == strip_timestamps(data["finalMessages"])
    assert_transcript_valid(context.messages)


@pytest.mark.parametrize("name", fixture_params(LOOP_FIXTURES))
async def test_model_saw_what_pi_sent(name: str, autojump_clock: trio.testing.MockClock) -> None:
    data, _, _, scripted = await replay(name)
    assert len(scripted.calls) == len(data["llmContexts"])
    for call, expected in zip(scripted.calls, data["llmContexts"], strict=True):
        assert call.context.system_prompt == expected["systemPrompt"]
        assert [t.name for t in call.context.tools] == expected["tools"]
        assert [m.role for m in call.context.messages] == [m["role"] for m in expected["messages"]]
