"""Structured output in a batch that also holds a call waiting for approval: the valid output
call is the answer once the decided calls have run; ``continue_()`` asks the model nothing
more, and ``state.output`` keeps the value. (Before: the continue run judged the decided call
alone as "on the way to the answer", asked the model again, and ended with no output.)"""

from __future__ import annotations

from typing import Any

import attrs

import pi_trio as pt

faux = pt.faux


@attrs.frozen
class Answer:
    value: int


async def test_the_output_of_a_batch_that_waited_is_the_answer() -> None:
    ran: list[str] = []

    async def refund(tool_call_id: str, params: dict[str, Any], on_update: Any) -> str:
        ran.append(tool_call_id)
        return "refunded"

    tool = pt.AgentTool(
        "refund", "Refund", "Refund money", {"type": "object"}, refund, requires_approval=True
    )
    both = [
        faux.tool_call("refund", {}, id="r1"),
        faux.tool_call("final_result", {"value": 42}, id="f1"),
    ]
    model = faux.FauxModel([faux.assistant_message(both), faux.assistant_message("never asked")])
    agent = pt.Agent(
        pt.AgentState(model=model.model, tools=[tool]), stream_fn=model, output_type=Answer
    )
    await agent.prompt("refund it and answer")
    assert [c.id for c in agent.state.pending_approvals] == ["r1"]
    agent.approve("r1")
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    await agent.continue_()
    assert ran == ["r1"] and len(model.calls) == 1
    assert agent.state.output == Answer(42) and agent.state.error_message is None
    [end] = [e for e in events if isinstance(e, pt.AgentEnd)]
    assert end.output == Answer(42)
