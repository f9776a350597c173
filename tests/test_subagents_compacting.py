"""A sub-agent whose child compacts its transcript during the call: the call's result is still
the child's answer, and its usage everything the child spent, the summarised turns and the
summary requests included. (Before: the result was read from the child's transcript at an
index taken before the compaction rewrote it: an error "did not answer", or usage short.)"""

from __future__ import annotations

import itertools

import attrs
import pytest

import pi_trio as pt

from .support import READ, ReadingModel, request_tokens

faux = pt.faux


def spent_by(model: ReadingModel) -> int:
    return sum(request_tokens(c) + 20 for c in [*model.requests, *model.summary_requests])


@pytest.mark.parametrize("earlier_turns", [0, 10])
async def test_a_compacting_child_answers_and_reports_all_it_spent(earlier_turns: int) -> None:
    reading = ReadingModel(turns=12)
    small = attrs.evolve(pt.get_model("faux", "faux-1"), context_window=4_000)
    child_model = faux.FauxModel(itertools.repeat(reading), model=small)
    history: list[pt.AgentMessage] = []
    for index in range(earlier_turns):  # a child that has worked before
        history += [pt.UserMessage(f"old task {index}"), faux.assistant_message(f"old {index}")]
    child = pt.Agent(
        pt.AgentState(model=child_model.model, tools=[READ], messages=history),
        stream_fn=child_model,
        compaction=pt.Compaction(reserve_tokens=500, keep_recent_tokens=1_000),
    )
    tool = pt.subagent_tool("research", "Research a topic", lambda call_id, params: child)
    parent_model = faux.FauxModel(
        [
            faux.assistant_message([faux.tool_call("research", {"task": "do it"}, id="t1")]),
            faux.assistant_message("parent done"),
        ]
    )
    parent = pt.Agent(pt.AgentState(model=parent_model.model, tools=[tool]), stream_fn=parent_model)
    await parent.prompt("go")
    assert reading.summary_requests  # it did compact
    [result] = [m for m in parent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert not result.is_error and result.content[0].text == "done"
    assert result.usage is not None and result.usage.total_tokens == spent_by(reading)
    assert result.details["subagent"]["messages"] == 1 + 2 * 12 + 1  # task, 12 turns, answer
