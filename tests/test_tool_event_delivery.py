"""The events of a parallel batch's tool tasks go out one at a time: whatever interrupts the
delivery of one (a Ctrl-C, an abort, a listener that raises, a tool's own timeout), every
subscriber gets every other event once and the run stays well-formed."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .grammar import check_events
from .support import faux, make_agent, sleeps


def _ends(log: list[pt.AgentEvent]) -> list[str]:
    return [e.tool_call_id for e in log if isinstance(e, pt.ToolExecutionEnd)]


def _quick_and_held(quick: Any, held: Any) -> pt.Agent:
    """An agent whose one answer calls tools "quick" (c1) and "held" (c2) in parallel."""
    tools = [
        pt.AgentTool("quick", "q", "q", {"type": "object"}, quick),
        pt.AgentTool("held", "h", "h", {"type": "object"}, held),
    ]
    message = faux.assistant_message(
        [faux.tool_call("quick", {}, id="c1"), faux.tool_call("held", {}, id="c2")]
    )
    return make_agent([message, faux.assistant_message("never")], tools)


@pytest.mark.parametrize("interrupted", ["call_1", "call_2"])
async def test_a_keyboard_interrupt_on_one_end_keeps_the_other_ends_delivered_once(
    interrupted: str, autojump_clock: trio.testing.MockClock
) -> None:
    # call_1's end reaches a listener that waits (t=1..3); call_2 and call_3 end meanwhile and
    # wait for their turn; then a listener raises KeyboardInterrupt on call_1's end (or on
    # call_2's, once it had its turn). A sibling woken by the released turn must not deliver
    # its end before the close-out: that would drop the note of who still needs the
    # interrupted end (which then went to the first listeners twice, to the rest out of order).
    agent = make_agent([sleeps(1, 2, 2.5), faux.assistant_message("never")])
    first: list[pt.AgentEvent] = []
    second: list[pt.AgentEvent] = []
    third: list[pt.AgentEvent] = []
    raised = False

    async def waits(event: pt.AgentEvent) -> None:
        first.append(event)
        if isinstance(event, pt.ToolExecutionEnd) and event.tool_call_id == "call_1":
            await trio.sleep(2)

    def interrupts(event: pt.AgentEvent) -> None:
        nonlocal raised
        second.append(event)
        is_end = isinstance(event, pt.ToolExecutionEnd)
        if is_end and event.tool_call_id == interrupted and not raised:  # type: ignore[union-attr]
            raised = True
            raise KeyboardInterrupt

    agent.subscribe(waits)
    agent.subscribe(interrupts)
    agent.subscribe(third.append)
    with pytest.raises(KeyboardInterrupt):
        await agent.prompt("go")
    assert raised
    for log in (first, second, third):
        assert sorted(_ends(log)) == ["call_1", "call_2", "call_3"]
        assert len({id(e) for e in log}) == len(log)  # nothing delivered twice
    assert first == second == third
    assert check_events(third) == []
    results = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert [m.content[0].text for m in results][:2] == ["slept 1", "slept 2"]  # type: ignore[union-attr]


async def _abort_while_a_sibling_returns() -> tuple[list[pt.AgentEvent], list[pt.AgentEvent]]:
    """One run: abort() lands while a listener waits on c1's end, at the moment c2's tool
    returns (its task runnable, so not cancellable until it checkpoints)."""
    gate = trio.Event()
    never = trio.Event()

    async def held(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await gate.wait()
        return pt.ToolResult([pt.TextContent("held")])

    async def quick(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent("quick")])

    agent = _quick_and_held(quick, held)
    first: list[pt.AgentEvent] = []
    second: list[pt.AgentEvent] = []

    async def waits(event: pt.AgentEvent) -> None:
        first.append(event)
        if isinstance(event, pt.ToolExecutionEnd) and event.tool_call_id == "c1":
            await trio.lowlevel.checkpoint()  # held's task is parked on the gate by now
            gate.set()
            agent.abort()
            await never.wait()

    agent.subscribe(waits)
    agent.subscribe(second.append)
    await agent.prompt("go")
    return first, second


async def test_an_abort_while_a_listener_waits_on_one_end_keeps_a_finished_sibling_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Whichever of the two tasks Trio runs first after the abort, c2's end must not be
    # delivered ahead of the close-out (which would drop the note of who still needs c1's
    # end). Trio picks the order at random: 16 runs see both orders (a miss: 2**-16).
    for _ in range(16):
        first, second = await _abort_while_a_sibling_returns()
        for log in (first, second):
            assert _ends(log) == ["c1", "c2"]
        assert first == second
        assert check_events(second) == []


async def test_a_listener_raising_at_once_on_one_end_keeps_a_runnable_sibling_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The same with plain-function listeners: the KeyboardInterrupt comes straight out of the
    # synchronous delivery while the sibling's tool has just returned (its task runnable).
    gate = trio.Event()

    async def held(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await gate.wait()
        raise ValueError("held failed")

    async def quick(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await trio.sleep(1)  # held's task is parked on the gate by then
        return pt.ToolResult([pt.TextContent("quick")])

    agent = _quick_and_held(quick, held)
    first: list[pt.AgentEvent] = []
    second: list[pt.AgentEvent] = []
    raised = False

    def interrupts(event: pt.AgentEvent) -> None:
        nonlocal raised
        first.append(event)
        if isinstance(event, pt.ToolExecutionEnd) and not raised:
            raised = True
            gate.set()
            raise KeyboardInterrupt

    agent.subscribe(interrupts)
    agent.subscribe(second.append)
    with pytest.raises(KeyboardInterrupt):
        await agent.prompt("go")
    for log in (first, second):
        assert _ends(log) == ["c1", "c2"]
    assert first == second
    assert check_events(second) == []
    # the sibling's end, sent by the close-out, is the one its task built: duration and error
    end = [e for e in second if isinstance(e, pt.ToolExecutionEnd)][1]
    assert isinstance(end.error, ValueError) and end.duration_ms is not None
    assert end.result.content[0].text == "ValueError: held failed"  # type: ignore[union-attr]


async def test_a_progress_update_cut_short_by_its_tools_timeout_leaves_the_batch_going(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The one interruption that does not end the batch: a tool's own timeout lands while its
    # progress update waits on a listener. The sibling that ended meanwhile (waiting for the
    # turn) still gets its end delivered, and the run goes on to the model's answer.
    async def reports(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await on_update(pt.ToolResult([pt.TextContent("half way")]))
        return pt.ToolResult([pt.TextContent("never")])

    async def quick(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await trio.sleep(0.5)
        return pt.ToolResult([pt.TextContent("quick")])

    tools = [
        pt.AgentTool("reports", "r", "r", {"type": "object"}, reports, timeout=1),
        pt.AgentTool("quick", "q", "q", {"type": "object"}, quick),
    ]
    message = faux.assistant_message(
        [faux.tool_call("reports", {}, id="c1"), faux.tool_call("quick", {}, id="c2")]
    )
    agent = make_agent([message, faux.assistant_message("done")], tools)
    log: list[pt.AgentEvent] = []

    async def slow_on_progress(event: pt.AgentEvent) -> None:
        log.append(event)
        if isinstance(event, pt.ToolExecutionUpdate):
            await trio.sleep(5)  # past the tool's timeout

    agent.subscribe(slow_on_progress)
    with trio.fail_after(60):
        await agent.prompt("go")
    assert sorted(_ends(log)) == ["c1", "c2"]
    assert agent.state.messages[-1].stop_reason == "stop"  # type: ignore[union-attr]
    assert check_events(log) == []
