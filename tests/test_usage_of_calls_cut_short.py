"""A call whose result gives no usage (cut short by its timeout, a steering message or an
abort, or failing) keeps the usage its updates reported (``on_update(ToolResult(...,
usage=...))``: what it spent so far). A sub-agent's forwarded ``message_end`` updates carry the
child's spending so far, so a child the parent's call cut short still counts toward the
parent's token budget, grandchildren included."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .support import SLEEP, calls, make_agent, record


def spending(tokens: int) -> pt.Usage:
    return pt.Usage(total_tokens=tokens, cost=pt.UsageCost(total=tokens / 100))


async def _spends_then_hangs(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await on_update(pt.ToolResult([], usage=spending(5)))
    await on_update(pt.ToolResult([], usage=spending(12)))
    await on_update(pt.ToolResult([]))  # an update without usage does not forget the last
    await trio.sleep(100)
    return pt.ToolResult([pt.TextContent("never")], usage=spending(99))


def _spender(**options: Any) -> pt.AgentTool:
    schema = {"type": "object", "properties": {}}
    return pt.AgentTool("spend", "Spend", "spends tokens", schema, _spends_then_hangs, **options)


def _result(agent: pt.Agent) -> pt.ToolResultMessage:
    (result,) = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
    return result


async def test_a_timed_out_call_keeps_the_usage_its_updates_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent(
        [calls(("spend", {})), faux.assistant_message("ok")], tools=(_spender(timeout=1),)
    )
    await agent.prompt("go")
    result = _result(agent)
    assert result.is_error and "timed out" in result.content[0].text  # type: ignore[union-attr]
    assert result.usage == spending(12)


async def test_a_call_a_steer_stopped_keeps_the_usage_its_updates_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent(
        [calls(("spend", {})), faux.assistant_message("ok")],
        tools=(_spender(),),
        steering_policy="at_tool_boundary",
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(1)
        agent.steer("stop that")
    result = _result(agent)
    assert result.details == {"stopped_by": "steering", "started": True}
    assert result.usage == spending(12)


def _child(tool_call_id: str, params: Any) -> pt.Agent:
    grandchild = pt.subagent_tool(
        "ask", "Asks", lambda _id, _p: make_agent([faux.assistant_message("g", usage=spending(7))])
    )
    first = faux.assistant_message([faux.tool_call("ask", {"task": "g"})], usage=spending(20))
    script = [first, faux.assistant_message([faux.tool_call("sleep", {"s": 100})])]
    script[-1].usage = spending(30)
    return make_agent([*script, faux.assistant_message("late")], tools=(grandchild, SLEEP))


async def test_a_sub_agent_s_forwarded_ends_carry_its_spending_so_far(
    autojump_clock: trio.testing.MockClock,
) -> None:
    parent = make_agent(
        [calls(("research", {"task": "t"})), faux.assistant_message("ok")],
        tools=(pt.subagent_tool("research", "Researches", _child, timeout=50),),
    )
    events = record(parent)
    await parent.prompt("go")
    reported = [
        event.partial_result.usage.total_tokens
        for event in events
        if isinstance(event, pt.ToolExecutionUpdate) and event.partial_result.usage is not None
    ]
    # its first answer, the grandchild's result, its second answer, and the aborted answer its
    # run closes with when the call times out (nothing more spent)
    assert reported == [20, 27, 57, 57]


async def _parent_run(child: Any, *, max_total_tokens: int) -> pt.Agent:
    """A parent that spends 10 tokens on a call of ``child`` as a sub-agent timed out at 50 s,
    and would answer after it; its run, done."""
    first = faux.assistant_message([faux.tool_call("research", {"task": "t"})])
    first.usage = spending(10)
    parent = make_agent(
        [first, faux.assistant_message("never reached")],
        tools=(pt.subagent_tool("research", "Researches", child, timeout=50),),
        max_total_tokens=max_total_tokens,
    )
    await parent.prompt("go")
    return parent


async def test_a_sub_agent_the_call_timed_out_counts_toward_the_parent_s_budget(
    autojump_clock: trio.testing.MockClock,
) -> None:
    parent = await _parent_run(_child, max_total_tokens=60)
    result = _result(parent)
    assert result.is_error and result.usage is not None
    assert result.usage.total_tokens == 57 and round(result.usage.cost.total, 6) == 0.57
    assert "max_total_tokens=60 reached (67 used)" in (parent.state.error_message or "")
    assert parent.state.messages[-1] is result


async def _spends_then_raises(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await on_update(pt.ToolResult([], usage=spending(12)))
    raise RuntimeError("out of luck")


async def test_a_call_that_raises_keeps_the_usage_its_updates_reported() -> None:
    schema = {"type": "object", "properties": {}}
    tool = pt.AgentTool("spend", "Spend", "spends tokens", schema, _spends_then_raises)
    agent = make_agent([calls(("spend", {})), faux.assistant_message("ok")], tools=(tool,))
    await agent.prompt("go")
    result = _result(agent)
    assert result.is_error and result.usage == spending(12)


def _grandchild(tool_call_id: str, params: Any) -> pt.Agent:
    first = faux.assistant_message([faux.tool_call("sleep", {"s": 1})], usage=spending(7))
    second = faux.assistant_message([faux.tool_call("sleep", {"s": 100})], usage=spending(11))
    return make_agent([first, second, faux.assistant_message("late")], tools=(SLEEP,))


def _child_waiting_for_its_grandchild(tool_call_id: str, params: Any) -> pt.Agent:
    first = faux.assistant_message([faux.tool_call("ask", {"task": "g"})], usage=spending(20))
    grandchild = pt.subagent_tool("ask", "Asks", _grandchild)
    return make_agent([first, faux.assistant_message("late")], tools=(grandchild,))


async def test_a_grandchild_cut_short_with_the_call_is_counted_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    parent = await _parent_run(_child_waiting_for_its_grandchild, max_total_tokens=45)
    # the child's 20 and the grandchild's 7 + 11, spent before the timeout: the grandchild's
    # result, made when the child's run was cut, carries what the grandchild reported
    result = _result(parent)
    assert result.usage is not None and result.usage.total_tokens == 38
    assert "max_total_tokens=45 reached (48 used)" in (parent.state.error_message or "")


@asynccontextmanager
async def _child_whose_session_fails_to_close() -> AsyncIterator[pt.Agent]:
    yield make_agent([faux.assistant_message("answer", usage=spending(40))])
    raise OSError("closing the child's session failed")


async def test_a_sub_agent_call_failing_after_its_child_ran_counts_what_the_child_spent() -> None:
    parent = make_agent(
        [calls(("research", {"task": "t"})), faux.assistant_message("ok")],
        tools=(
            pt.subagent_tool(
                "research", "Researches", lambda _id, _params: _child_whose_session_fails_to_close()
            ),
        ),
    )
    await parent.prompt("go")
    result = _result(parent)
    assert result.is_error and "closing the child's session failed" in result.content[0].text  # type: ignore[union-attr]
    assert result.usage == spending(40)
