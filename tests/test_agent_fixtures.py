"""Every scenario recorded from pi's Agent, replayed through ``pt.Agent``.

Checks the events (as pi recorded them), the final transcript, the state after each operation
and at agent_end, what is left queued, and the exact texts of the errors pi threw.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

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
from .support import make_agent, strip_timestamps, trimmed
from .transcript import assert_transcript_valid


def _state_summary(agent: pt.Agent) -> dict[str, Any]:
    state = agent.state
    return {
        "isStreaming": state.is_streaming,
        "errorMessage": state.error_message,
        "pendingToolCalls": sorted(state.pending_tool_calls),
        "messageCount": len(state.messages),
    }


def _queued_messages(data: dict[str, Any]) -> list[pt.AgentMessage]:
    """Messages the driver queued before running: user messages stamped 10, 11, ..."""
    initial = {m["timestamp"] for m in data["initialMessages"]}
    return [
        pt.from_json(m, pt.AgentMessage)
        for m in data["finalMessages"]
        if m["role"] == "user" and 10 <= m["timestamp"] < 1000 and m["timestamp"] not in initial
    ]


class Recorder:
    def __init__(self, agent: pt.Agent) -> None:
        self.agent = agent
        self.events: list[dict[str, Any]] = []
        self.at_agent_end: list[dict[str, Any]] = []

    def __call__(self, event: pt.AgentEvent) -> None:
        self.events.append(trimmed(pt.to_json(event)))
        if event.type == "agent_end":
            self.at_agent_end.append(_state_summary(self.agent))


async def _drive(name: str, data: dict[str, Any], agent: pt.Agent) -> list[dict[str, Any]]:
    """Perform the fixture's operations; return [{op, thrown, stateAfter}]."""
    results: list[dict[str, Any]] = []

    async def attempt(op: str, call: Any) -> None:
        thrown = None
        try:
            await call()
        except (pt.AgentBusyError, pt.ContinueError) as exc:
            thrown = str(exc)
        results.append({"op": op, "thrown": thrown, "stateAfter": _state_summary(agent)})

    driver = data["config"]["driver"]
    queued = _queued_messages(data)
    for message in queued:
        (agent.follow_up if "followUp" in driver else agent.steer)(message)
    if name == "O16d":
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "first")
            await trio.testing.wait_all_tasks_blocked()
            await attempt("prompt('second') while active", lambda: agent.prompt("second"))
            await attempt("continue() while active", agent.continue_)
        results.append(
            {"op": "await first prompt", "thrown": None, "stateAfter": _state_summary(agent)}
        )
    elif data["operations"][0]["op"] == "continue":
        await attempt("continue", agent.continue_)
    else:
        await attempt(data["operations"][0]["op"], lambda: agent.prompt(prompt_messages(name)))
    return results


@pytest.mark.parametrize("name", fixture_params())
async def test_agent_replays_pi(name: str, autojump_clock: trio.testing.MockClock) -> None:
    data = load(name)
    config = data["config"]
    agent = make_agent(
        faux.FauxModel(script_steps(data), model=SCRIPTED_MODEL),
        fixture_tools(data),
        system_prompt=SYSTEM_PROMPT,
        messages=initial_messages(data),
        tool_execution="sequential" if config["toolExecution"] == "sequential" else "parallel",
        **fixture_hooks(name),
    )
    recorder = Recorder(agent)
    agent.subscribe(recorder)

    results = await _drive(name, data, agent)

    assert strip_timestamps(recorder.events) == strip_timestamps(data["events"])
    final = [pt.to_json(m) for m in agent.state.messages]
    assert strip_timestamps(final) == strip_timestamps(data["finalMessages"])
    assert recorder.at_agent_end == data["stateAtAgentEnd"]
    # pi's texts, with pi's method name followUp() spelled as the Python method follow_up()
    expected_thrown = [op["thrown"] and op["thrown"].replace("followUp()", "follow_up()")
                       for op in data["operations"]]  # fmt: skip
    assert [r["thrown"] for r in results] == expected_thrown
    for got, expected in zip(results, data["operations"], strict=True):
        if name == "O16d" and expected["stateAfter"]["isStreaming"]:
            # pi tried while its run had not reached the prompt's message_end; here the first
            # prompt has run until it blocked in its tool. The run is active in both.
            assert got["stateAfter"]["isStreaming"] is True
            continue
        assert got["stateAfter"] == expected["stateAfter"]
    final_state = {k: v for k, v in _state_summary(agent).items() if k != "messageCount"}
    assert final_state == data["finalState"]
    assert agent.has_queued_messages() == data["queuedAtEnd"]
    assert_transcript_valid(agent.state.messages)
