"""Sub-agents at their edges: a child whose tool call waits for approval (DESIGN 9.4, 9.5)."""

from __future__ import annotations

from typing import Any

import pi_trio as pt

from .support import faux, make_scripted_agent, tool_results
from .test_approvals import refund_tool


async def test_a_child_call_waiting_for_approval_is_an_error_result_that_says_so() -> None:
    ran: list[float] = []

    def factory(tool_call_id: str, params: Any) -> pt.Agent:
        child, _ = make_scripted_agent(
            [faux.assistant_message([faux.tool_call("refund", {"amount": 5}, id="c1")])],
            (refund_tool(ran),),
        )
        return child

    helper = pt.subagent_tool("helper", "helps", factory)
    agent, _ = make_scripted_agent(
        [
            faux.assistant_message([faux.tool_call("helper", {"task": "refund 5"}, id="h1")]),
            faux.assistant_message("done"),
        ],
        (helper,),
    )
    await agent.prompt("go")
    [(call_id, text, is_error)] = tool_results(agent.state.messages)
    assert (call_id, is_error, ran) == ("h1", True, [])
    assert "approval" in text and "refund 'c1'" in text
    assert agent.state.pending_approvals == ()  # the parent does not wait for it
