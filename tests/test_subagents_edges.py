"""Sub-agents at their edges: a child whose tool call waits for approval (DESIGN 9.4, 9.5),
and a sub-agent tool made with options it cannot use."""

from __future__ import annotations

from typing import Any

import pytest

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


@pytest.mark.parametrize(
    ("options", "error", "said"),
    [
        ({"max_depth": True}, TypeError, "max_depth must be an int"),
        ({"max_depth": 2.5}, TypeError, "max_depth must be an int"),
        ({"task_of": "task"}, TypeError, "task_of must be a function"),
        ({"replay": "sometimes"}, ValueError, "replay must be 'never' or 'safe'"),
        (
            {"parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
            ValueError,
            "no 'task' field",
        ),
    ],
)
def test_a_sub_agent_tool_is_checked_when_it_is_made(
    options: dict[str, Any], error: type[Exception], said: str
) -> None:
    """Before: accepted, then failed at the first call (a child made and dropped), or never."""
    with pytest.raises(error, match=said):
        pt.subagent_tool("research", "Research", lambda call_id, params: pt.Agent(), **options)


def test_custom_parameters_with_a_task_of_need_no_task_field() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tool = pt.subagent_tool("r", "R", lambda c, p: pt.Agent(), parameters=schema, task_of=str)
    assert tool.name == "r"
