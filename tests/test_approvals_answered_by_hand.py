"""A call waiting for approval that the application answers itself (a tool result added to the
transcript, as ``continue_()``'s docstring allows): it waits no more, ``continue_()`` goes on
to the model, and the agent is not left "awaiting approval" for good. (Before: every later
``prompt()`` and ``compact()`` raised "decided, not yet run", which nothing could mend.)"""

from __future__ import annotations

from typing import Any

import pytest

import pi_trio as pt

faux = pt.faux


async def _refund(tool_call_id: str, params: dict[str, Any], on_update: Any) -> str:
    raise AssertionError("the call was answered by hand: it must not run")


REFUND = pt.AgentTool(
    "refund", "Refund", "Refund money", {"type": "object"}, _refund, requires_approval=True
)


async def test_a_waiting_call_answered_by_hand_waits_no_more() -> None:
    model = faux.FauxModel(
        [
            faux.assistant_message([faux.tool_call("refund", {}, id="r1")]),
            faux.assistant_message("ok, refunded"),
            faux.assistant_message("next answer"),
        ]
    )
    agent = pt.Agent(pt.AgentState(model=model.model, tools=[REFUND]), stream_fn=model)
    await agent.prompt("refund me")
    assert [c.id for c in agent.state.pending_approvals] == ["r1"]
    agent.state.messages.append(
        pt.ToolResultMessage("r1", "refund", [pt.TextContent("done by hand")], is_error=False)
    )
    assert agent.state.pending_approvals == () and not agent.state.awaiting_approval
    with pytest.raises(KeyError, match="no tool call 'r1' waits"):
        agent.approve("r1")
    await agent.continue_()
    assert agent.state.messages[-1].content[0].text == "ok, refunded"
    await agent.prompt("and now?")  # before: ContinueError "decided, not yet run"
    assert agent.state.messages[-1].content[0].text == "next answer"
