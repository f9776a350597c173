"""Approvals at their edges: messages queued while calls wait, odd inputs to the deciders
(DESIGN 9.4)."""

from __future__ import annotations

import pytest

import pi_trio as pt

from .support import ECHO, faux, make_scripted_agent
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
