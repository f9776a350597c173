"""Approvals at their edges: messages queued while calls wait, a continue cut before its
batch ran (DESIGN 9.4)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.testing import assert_events_valid, check_transcript

from .support import ECHO, faux, make_scripted_agent, record, tool_results
from .test_approvals import mixed_batch, refund_tool


@pytest.mark.parametrize("policy", ["one-at-a-time", "at_tool_boundary"])
async def test_a_steer_queued_while_calls_wait_goes_after_their_results(policy: str) -> None:
    # the model must get the assistant's tool calls followed by all their results; a user
    # message between them is a transcript providers refuse
    ran: list[float] = []
    options = {} if policy == "one-at-a-time" else {"steering_policy": policy}
    agent, scripted = make_scripted_agent(
        [mixed_batch(), faux.assistant_message("done")], (ECHO, refund_tool(ran)), **options
    )
    await agent.prompt("refund it")
    agent.steer("and say hi")
    agent.approve("r1")
    await agent.continue_()
    assert ran == [250]  # the approved call ran (a queued steer does not skip it)
    sent = [(m.role, getattr(m, "tool_call_id", None)) for m in scripted.calls[-1].context.messages]
    assert sent == [
        ("user", None),
        ("assistant", None),
        ("toolResult", "e1"),
        ("toolResult", "e2"),
        ("toolResult", "r1"),
        ("user", None),
    ]


async def _cut_at_start(agent: pt.Agent, how: str) -> None:
    if how.startswith("abort,"):
        async with trio.open_nursery() as nursery:
            await nursery.start(agent.continue_)
            agent.abort()
    elif how == "outer cancel":
        with trio.CancelScope() as scope:
            scope.cancel()
            await agent.continue_()
    else:  # abort while a listener holds agent_start

        async def slow(event: pt.AgentEvent, *_: Any) -> None:
            if event.type == "agent_start":
                await trio.sleep(1)

        agent.subscribe(slow)
        async with trio.open_nursery() as nursery:
            await nursery.start(agent.continue_)
            await trio.testing.wait_all_tasks_blocked()
            agent.abort()


@pytest.mark.parametrize(
    "how", ["abort, listened", "abort, unlistened", "outer cancel", "abort in agent_start"]
)
async def test_a_continue_cut_before_its_batch_gives_the_decided_calls_aborted_results(
    how: str,
) -> None:
    ran: list[float] = []
    agent, _ = make_scripted_agent(
        [mixed_batch(), faux.assistant_message("later")], (ECHO, refund_tool(ran))
    )
    await agent.prompt("refund it")
    agent.approve("r1")
    events = record(agent) if how != "abort, unlistened" else []
    await _cut_at_start(agent, how)
    assert ran == []
    assert ("r1", "Tool execution was aborted", True) in tool_results(agent.state.messages)
    assert check_transcript(agent.state.messages) == []  # every call has its result
    assert not agent.state.awaiting_approval
    if events:
        assert_events_valid(events)
    await agent.prompt("go on")  # the agent is usable again
    assert agent.state.messages[-1].content[0].text == "later"  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [None, 1, ["r1"]])
async def test_a_tool_call_id_that_is_not_a_string_is_a_type_error(bad: Any) -> None:
    agent, _ = make_scripted_agent([mixed_batch()], (ECHO, refund_tool([])))
    await agent.prompt("refund it")
    with pytest.raises(TypeError, match=r"tool_call_id must be a str \(a ToolCall's \.id\)"):
        agent.approve(bad)
    with pytest.raises(TypeError, match="tool_call_id must be a str"):
        agent.deny(bad, "no")
    assert [call.id for call in agent.state.pending_approvals] == ["r1"]  # nothing decided
