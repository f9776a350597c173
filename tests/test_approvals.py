"""Tool calls that wait for a person's decision: the run ends with them waiting, ``approve`` /
``deny`` decide, ``continue_()`` runs them (DESIGN 9.4), in memory."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.testing import assert_events_valid

from .support import ECHO, faux, make_scripted_agent, record, tool_results, user_texts

REFUND_SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "number"}},
    "required": ["amount"],
}


def refund_tool(ran: list[float], requires_approval: Any = True) -> pt.AgentTool:
    async def refund(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        ran.append(params["amount"])
        return pt.ToolResult([pt.TextContent(f"refunded {params['amount']}")])

    return pt.AgentTool(
        "refund", "Refund", "refunds", REFUND_SCHEMA, refund, requires_approval=requires_approval
    )


def mixed_batch() -> pt.AssistantMessage:
    """echo, refund (waits), echo: one call waits, two run."""
    return faux.assistant_message(
        [
            faux.tool_call("echo", {"text": "a"}, id="e1"),
            faux.tool_call("refund", {"amount": 250}, id="r1"),
            faux.tool_call("echo", {"text": "b"}, id="e2"),
        ]
    )


async def test_a_waiting_call_ends_the_run_and_the_rest_of_its_batch_runs() -> None:
    ran: list[float] = []
    agent, scripted = make_scripted_agent(
        [mixed_batch(), faux.assistant_message("done")], (ECHO, refund_tool(ran))
    )
    events = record(agent)
    await agent.prompt("refund it")
    assert ran == []
    assert len(scripted.calls) == 1  # the model is not called while r1 waits
    assert [call.id for call in agent.state.pending_approvals] == ["r1"]
    assert tool_results(agent.state.messages) == [("e1", "a", False), ("e2", "b", False)]
    types = [event.type for event in events]
    start = types.index("tool_execution_start", types.index("tool_execution_start") + 1)
    assert events[start].tool_call_id == "r1"  # type: ignore[union-attr]
    request = events[start + 1]
    assert isinstance(request, pt.ToolApprovalRequest)
    assert (request.tool_call_id, request.tool_name, request.args) == (
        "r1",
        "refund",
        {"amount": 250},
    )
    assert types[-1] == "agent_end"
    assert_events_valid(events)
    assert pt.from_json(pt.to_json(request), pt.AgentEvent) == request


async def test_approve_then_continue_runs_the_call_once_then_calls_the_model() -> None:
    ran: list[float] = []
    agent, scripted = make_scripted_agent(
        [mixed_batch(), faux.assistant_message("done")], (ECHO, refund_tool(ran))
    )
    await agent.prompt("refund it")
    agent.approve("r1")
    assert agent.state.pending_approvals == ()
    events = record(agent)
    await agent.continue_()
    assert ran == [250]
    assert agent.state.messages[-1].content[0].text == "done"  # type: ignore[union-attr]
    assert not agent.state.awaiting_approval
    assert ("r1", "refunded 250", False) in tool_results(agent.state.messages)
    # the model got every result: both echoes and the refund
    answered = {
        m.tool_call_id for m in scripted.calls[-1].context.messages if m.role == "toolResult"
    }  # type: ignore[union-attr]
    assert answered == {"e1", "r1", "e2"}
    assert_events_valid(events)
    with pytest.raises(KeyError, match="waits for a decision"):
        agent.approve("r1")  # answered already


async def test_deny_gives_an_error_result_whose_reason_reaches_the_model() -> None:
    ran: list[float] = []
    agent, scripted = make_scripted_agent(
        [mixed_batch(), faux.assistant_message("ok")], (ECHO, refund_tool(ran))
    )
    await agent.prompt("refund it")
    agent.deny("r1", "over the limit for this customer")
    await agent.continue_()
    assert ran == []
    result = next(
        m for m in scripted.calls[-1].context.messages if getattr(m, "tool_call_id", "") == "r1"
    )
    assert result.is_error  # type: ignore[union-attr]
    text = result.content[0].text  # type: ignore[union-attr]
    assert "denied" in text and "over the limit for this customer" in text


async def test_a_callable_policy_decides_per_call_with_validated_arguments() -> None:
    ran: list[float] = []
    seen: list[Any] = []

    async def over_100(context: pt.BeforeToolCallContext) -> bool:
        seen.append(context.args)
        return bool(context.args["amount"] > 100)

    script = [
        faux.assistant_message(
            [
                faux.tool_call("refund", {"amount": "50"}, id="small"),  # coerced to 50
                faux.tool_call("refund", {"amount": 500}, id="big"),
            ]
        ),
        faux.assistant_message("done"),
    ]
    agent, _ = make_scripted_agent(script, (refund_tool(ran, over_100),))
    await agent.prompt("two refunds")
    assert ran == [50]
    assert seen == [{"amount": 50}, {"amount": 500}]
    assert [call.id for call in agent.state.pending_approvals] == ["big"]
    agent.approve("big")
    await agent.continue_()
    assert ran == [50, 500]
    assert seen[-1] == {"amount": 500} and len(seen) == 2  # a decided call is not asked again


async def test_a_policy_that_raises_or_returns_a_non_bool_is_the_calls_error() -> None:
    def broken(context: pt.BeforeToolCallContext) -> Any:
        return "yes"

    agent, _ = make_scripted_agent(
        [faux.assistant_message([faux.tool_call("refund", {"amount": 1}, id="r")]),
         faux.assistant_message("done")],
        (refund_tool([], broken),),
    )  # fmt: skip
    await agent.prompt("x")
    ((_, text, is_error),) = tool_results(agent.state.messages)
    assert is_error and "must return a bool" in text
    assert agent.state.pending_approvals == ()


async def test_nothing_calls_the_model_while_a_call_waits() -> None:
    agent, scripted = make_scripted_agent(
        [mixed_batch(), faux.assistant_message("done")], (ECHO, refund_tool([]))
    )
    await agent.prompt("refund it")
    with pytest.raises(pt.ContinueError, match=r"refund 'r1'"):
        await agent.prompt("and another thing")
    with pytest.raises(pt.ContinueError, match="approve"):
        await agent.continue_()
    agent.follow_up("queued meanwhile")
    agent.steer("steered meanwhile")
    assert len(scripted.calls) == 1
    agent.approve("r1")
    await agent.continue_()
    # the queued messages went in after the waiting call's result, before the model's turn
    assert user_texts(scripted.calls[1].context.messages)[-1] == "steered meanwhile"
    with pytest.raises(KeyError, match="unknown"):
        agent.deny("unknown")


async def test_unknown_and_twice_decided_calls_raise() -> None:
    agent, _ = make_scripted_agent([mixed_batch()], (ECHO, refund_tool([])))
    await agent.prompt("refund it")
    with pytest.raises(KeyError, match="no tool call 'e1' waits"):
        agent.approve("e1")
    agent.deny("r1")
    with pytest.raises(KeyError, match="denied already"):
        agent.approve("r1")


def slow_tool(release: trio.Event) -> pt.AgentTool:
    """A tool that returns once ``release`` is set."""

    async def slow(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await release.wait()
        return pt.ToolResult([pt.TextContent("slow done")])

    return pt.AgentTool("slow", "Slow", "waits", {"type": "object"}, slow)


def refund_and_slow() -> pt.AssistantMessage:
    """A refund (waits for approval) beside a slow call (runs until released)."""
    return faux.assistant_message(
        [faux.tool_call("refund", {"amount": 9}, id="r1"), faux.tool_call("slow", {}, id="s1")]
    )


async def test_an_abort_during_the_batch_withdraws_the_request_and_drops_a_decision() -> None:
    release = trio.Event()
    script = [refund_and_slow()]
    ran: list[float] = []
    agent, _ = make_scripted_agent(script, (refund_tool(ran), slow_tool(release)))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        assert [call.id for call in agent.state.pending_approvals] == ["r1"]
        agent.approve("r1")  # decided while the batch still runs ...
        agent.abort()  # ... and the run is aborted before the batch ends
    assert ran == []
    assert not agent.state.awaiting_approval
    results = {
        m.tool_call_id: m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)
    }
    assert results["r1"].is_error and results["s1"].is_error  # both aborted
    with pytest.raises(KeyError):
        agent.approve("r1")


async def test_a_decision_made_during_the_run_is_run_by_the_next_continue() -> None:
    release = trio.Event()
    script = [refund_and_slow(), faux.assistant_message("done")]
    ran: list[float] = []
    agent, scripted = make_scripted_agent(script, (refund_tool(ran), slow_tool(release)))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        agent.approve("r1")
        release.set()
    assert ran == [] and len(scripted.calls) == 1
    assert agent.state.awaiting_approval and agent.state.pending_approvals == ()
    await agent.continue_()
    assert ran == [9] and len(scripted.calls) == 2


async def test_an_aborted_continue_gives_the_approved_call_an_aborted_result() -> None:
    started = trio.Event()

    async def hang(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        started.set()
        await trio.sleep_forever()
        raise AssertionError

    tool = pt.AgentTool("hang", "Hang", "hangs", {"type": "object"}, hang, requires_approval=True)
    agent, _ = make_scripted_agent(
        [faux.assistant_message([faux.tool_call("hang", {}, id="h1")])], (tool,)
    )
    await agent.prompt("go")
    agent.approve("h1")
    events = record(agent)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.continue_)
        await started.wait()
        agent.abort()
    assert_events_valid(events)
    ((_, text, is_error),) = tool_results(agent.state.messages)
    assert is_error and text == "Tool execution was aborted"
    assert not agent.state.awaiting_approval


async def test_reset_and_a_new_transcript_forget_waiting_calls() -> None:
    agent, _ = make_scripted_agent([mixed_batch(), mixed_batch()], (ECHO, refund_tool([])))
    await agent.prompt("refund it")
    agent.state.messages = []
    assert not agent.state.awaiting_approval
    await agent.prompt("again")
    assert agent.state.pending_approvals
    agent.reset()
    assert not agent.state.awaiting_approval


def test_requires_approval_is_checked_where_it_is_set() -> None:
    with pytest.raises(TypeError, match="requires_approval must be True, False or a callable"):
        refund_tool([], "yes")

    @pt.tool(requires_approval=True, replay="safe", timeout=5)
    async def delete(path: str) -> str:
        """Delete a file."""
        return path

    assert delete.requires_approval is True and delete.replay == "safe" and delete.timeout == 5


async def test_a_decision_covers_the_call_that_waited_never_a_later_one() -> None:
    ran: list[float] = []
    ask = faux.assistant_message([faux.tool_call("refund", {"amount": 5}, id="same")])
    agent, _ = make_scripted_agent([ask, ask, faux.assistant_message("done")], (refund_tool(ran),))
    await agent.prompt("go")
    agent.approve("same")
    await agent.continue_()
    assert ran == [5]  # the approved call ran; the model's next call of the same id waits
    assert [call.id for call in agent.state.pending_approvals] == ["same"]


async def test_compact_waits_until_the_waiting_calls_have_results() -> None:
    agent, _ = make_scripted_agent([mixed_batch()], (ECHO, refund_tool([])))
    await agent.prompt("refund it")
    with pytest.raises(pt.ContinueError, match="refund 'r1'"):
        await agent.compact()


async def test_every_waiting_call_of_a_large_batch_is_listed_in_source_order() -> None:
    calls = [faux.tool_call("refund", {"amount": n}, id=f"r{n}") for n in range(2_000)]
    calls.insert(1_000, faux.tool_call("refund", {"amount": -1}, id="r0"))  # a reused id
    agent, _ = make_scripted_agent([faux.assistant_message(calls)], (refund_tool([]),))
    await agent.prompt("refund them all")
    asked = agent.state.last_assistant_message
    assert asked is not None
    waiting = agent.state.pending_approvals
    assert [call.id for call in waiting] == [f"r{n}" for n in range(2_000)]
    assert all(call is asked.content[n] for n, call in enumerate(waiting[:1_000]))
    assert waiting[0].arguments == {"amount": 0}  # the first call of an id is the one waiting
