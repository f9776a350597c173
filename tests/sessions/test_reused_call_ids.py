"""A model that numbers its tool calls per turn (``call_0``, as local models do) reuses ids:
what the log holds about an earlier call (its approval, decision, intent, result) never
covers a later call of the same id after the session is reopened. The later call waits for
its own decision, and runs only once that is made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pi_trio as pt
from pi_trio.providers import faux

REFUND_ARGS = {"type": "object", "properties": {"amount": {"type": "number"}}}


def refunding(runs: list[Any]) -> pt.AgentTool:
    async def refund(tool_call_id: str, params: dict[str, Any], on_update: Any) -> str:
        runs.append(params["amount"])
        return f"refunded {params['amount']}"

    return pt.AgentTool(
        "refund", "Refund", "Refund money", REFUND_ARGS, refund, requires_approval=True
    )


def refund_call(amount: int) -> pt.AssistantMessage:
    return faux.assistant_message([faux.tool_call("refund", {"amount": amount}, id="call_0")])


async def test_an_earlier_calls_decision_does_not_run_a_later_one(tmp_path: Path) -> None:
    runs: list[Any] = []
    model = faux.FauxModel([refund_call(10), refund_call(9_999), faux.assistant_message("ok")])
    state = pt.AgentState(model=model.model, tools=[refunding(runs)])
    async with pt.open_session_store(tmp_path / "s.db") as store:
        async with store.open_agent("s", initial_state=state, stream_fn=model) as agent:
            await agent.prompt("refund 10")
            agent.approve("call_0")
            agent.reset()  # the approved call never runs
            await agent.prompt("refund 9999")
        [(_, waiting)] = await store.pending_approvals()
        assert waiting.arguments == {"amount": 9_999}
        async with store.open_agent("s", initial_state=state, stream_fn=model) as agent:
            assert [c.arguments for c in agent.state.pending_approvals] == [{"amount": 9_999}]
            assert agent.state.tool_decisions == {}
            agent.deny("call_0", "too much")
            await agent.continue_()
    assert runs == []


async def test_an_earlier_calls_result_does_not_answer_a_later_one(tmp_path: Path) -> None:
    runs: list[Any] = []
    done = faux.assistant_message("done")
    model = faux.FauxModel([refund_call(10), done, refund_call(9_999), done])
    state = pt.AgentState(model=model.model, tools=[refunding(runs)])
    async with pt.open_session_store(tmp_path / "s.db") as store:
        async with store.open_agent("s", initial_state=state, stream_fn=model) as agent:
            await agent.prompt("refund 10")
            agent.approve("call_0")
            await agent.continue_()
            await agent.prompt("refund 9999")  # the same id waits again
        [(_, waiting)] = await store.pending_approvals()
        assert waiting.arguments == {"amount": 9_999}
        await store.approve("s", "call_0")
        async with store.open_agent("s", initial_state=state, stream_fn=model) as agent:
            assert agent.state.tool_decisions["call_0"].approved
            await agent.continue_()
            results = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert runs == [10, 9_999]
    assert [r.content[0].text for r in results] == ["refunded 10", "refunded 9999"]
