"""A hostile review of the synchronous-first emit (7de5536) and the leaf walk of
``only_cancelled`` (c770044): what a Trio user can do to a parallel batch's events.

Each test names the behaviour it pins; each was seen to fail with that behaviour broken."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio._groups import only_cancelled, plain_exception

from .grammar import check_events
from .support import escaped_from_prompt, faux, make_agent, sleeps

# --- a delivery interrupted in one tool task, while a sibling's end waits its turn ------------


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


# --- a tool's own nursery: its group never reaches the caller --------------------------------


async def _nursery_tool(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    """A tool with a nursery of its own: a cancellation from outside comes out of it as a
    group of ``Cancelled`` (strict exception groups), a child's KeyboardInterrupt as a group."""

    async def child() -> None:
        if params.get("interrupt"):
            raise KeyboardInterrupt
        await trio.sleep(10)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(child)
        nursery.start_soon(child)
    return pt.ToolResult([pt.TextContent("never")])


NURSERY_TOOL = pt.AgentTool("nested", "n", "n", {"type": "object"}, _nursery_tool)


def _nested_calls(count: int, **args: Any) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.tool_call("nested", dict(args), id=f"c{i}") for i in range(count)]
    )


@pytest.mark.parametrize(("count", "mode"), [(1, "parallel"), (2, "sequential"), (2, "parallel")])
async def test_a_deadline_through_a_tools_nursery_reaches_the_caller_as_a_plain_cancelled(
    count: int, mode: str, autojump_clock: trio.testing.MockClock
) -> None:
    agent = make_agent([_nested_calls(count), faux.assistant_message("x")], [NURSERY_TOOL])
    agent.tool_execution = mode  # type: ignore[assignment]
    assert await escaped_from_prompt(agent) == [trio.Cancelled]  # not a BaseExceptionGroup
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]


@pytest.mark.parametrize(("count", "mode"), [(1, "parallel"), (2, "sequential"), (2, "parallel")])
async def test_a_keyboard_interrupt_from_a_tools_nursery_reaches_the_caller_plain(
    count: int, mode: str, autojump_clock: trio.testing.MockClock
) -> None:
    agent = make_agent(
        [_nested_calls(count, interrupt=True), faux.assistant_message("x")], [NURSERY_TOOL]
    )
    agent.tool_execution = mode  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):  # a group would not match
        await agent.prompt("go")
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert agent.state.is_streaming is False


async def test_a_deadline_through_a_stream_fns_nursery_reaches_the_caller_plain(
    autojump_clock: trio.testing.MockClock,
) -> None:
    @asynccontextmanager
    async def streaming(model: pt.Model, context: Any, options: Any) -> AsyncIterator[Any]:
        async def events() -> AsyncGenerator[pt.StreamEvent, None]:
            async with trio.open_nursery() as nursery:  # a keep-alive task, say
                nursery.start_soon(trio.sleep_forever)
                yield pt.StreamStart(pt.AssistantMessage([], model.api, model.provider, model.id))
                await trio.sleep_forever()

        async with aclosing(events()) as stream:
            yield stream

    agent = pt.Agent(pt.AgentState(model=pt.get_model("faux", "faux-1")), stream_fn=streaming)
    assert await escaped_from_prompt(agent) == [trio.Cancelled]
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]


async def test_a_hooks_group_with_a_keyboard_interrupt_reaches_the_caller_plain() -> None:
    def before(context: pt.BeforeToolCallContext) -> None:
        raise BaseExceptionGroup("the hook's own nursery", [KeyboardInterrupt()])

    agent = make_agent([sleeps(0), faux.assistant_message("x")], before_tool_call=before)
    with pytest.raises(KeyboardInterrupt):
        await agent.prompt("go")
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]


# --- agent.events(): what comes out of prompt() comes out of the block -------------------------


async def test_a_keyboard_interrupt_is_not_lost_leaving_an_events_block_after_a_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The deadline aborts the run; a Ctrl-C lands in the close-out (a listener raises it on
    # agent_end), so prompt() raises KeyboardInterrupt with the deadline's cancellation
    # pending. Leaving the events() block must not checkpoint: the Cancelled it raised took
    # the KeyboardInterrupt's place, and the deadline's scope swallowed it.
    agent = make_agent([sleeps(10), faux.assistant_message("never")])

    def interrupts(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.AgentEnd):
            raise KeyboardInterrupt

    agent.subscribe(interrupts)
    with pytest.raises(KeyboardInterrupt), trio.move_on_after(1):
        async with agent.events():
            await agent.prompt("go")


# --- only_cancelled / plain_exception on groups from real nested nurseries ----------------------


async def _nested_nursery_group(interrupt: bool) -> BaseExceptionGroup[BaseException]:
    """What two levels of nurseries raise when an outer scope is cancelled while they run
    (and, with ``interrupt``, one inner task raises KeyboardInterrupt as it is cancelled)."""

    async def inner_task(raises: bool) -> None:
        try:
            await trio.sleep_forever()
        finally:
            if raises:
                raise KeyboardInterrupt

    async def middle(raises: bool) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(inner_task, False)
            nursery.start_soon(inner_task, raises)

    with trio.CancelScope() as scope:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(middle, False)
                nursery.start_soon(middle, interrupt)
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
        except BaseExceptionGroup as group:
            return group
    raise AssertionError("no group")


async def test_a_keyboard_interrupt_two_nurseries_down_is_not_taken_for_a_cancellation() -> None:
    group = await _nested_nursery_group(interrupt=True)
    assert only_cancelled(group) is None
    assert isinstance(plain_exception(group), KeyboardInterrupt)


async def test_a_cancellation_two_nurseries_down_is_one_plain_cancelled() -> None:
    group = await _nested_nursery_group(interrupt=False)
    cancelled = only_cancelled(group)
    assert isinstance(cancelled, trio.Cancelled)
    assert plain_exception(group) is cancelled
