"""``agent.events()``: memory-channel subscriptions fed from the agent's sink.

A subscriber gets the same events, in the same order, as a listener; when its buffer holds
``max_buffer_size`` events it misses streaming updates (``message_update``,
``tool_execution_update``) but never a lifecycle event; a reader that keeps up (its buffer
larger than the burst of events sent between two checkpoints of the run) misses nothing.
The subscription spans runs and ends with its ``async with`` block.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .grammar import assert_event_grammar
from .support import calls, drain, faux, make_agent, reachable, record, sleeps

UPDATES = (pt.MessageUpdate, pt.ToolExecutionUpdate)


async def _progress(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    for step in range(3):
        await trio.sleep(1)
        await on_update(pt.ToolResult([pt.TextContent(f"step {step}")]))
    return pt.ToolResult([pt.TextContent("done")])


PROGRESS = pt.AgentTool("progress", "Progress", "reports 3 steps", {"type": "object"}, _progress)


def _progress_script() -> list[pt.AssistantMessage]:
    """A tool reporting three steps, then a streamed answer: the run most tests here read."""
    return [calls(("progress", {})), faux.assistant_message("all done now")]


def _lifecycle(events: list[pt.AgentEvent]) -> list[pt.AgentEvent]:
    return [e for e in events if not isinstance(e, UPDATES)]


def _same(a: list[pt.AgentEvent], b: list[pt.AgentEvent]) -> bool:
    """The very same event objects, in the same order."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


async def _read_until_agent_end(
    rx: trio.MemoryReceiveChannel[pt.AgentEvent], into: list[pt.AgentEvent]
) -> None:
    with trio.fail_after(60):  # virtual time: a lost agent_end fails instead of hanging
        async for event in rx:
            into.append(event)
            if isinstance(event, pt.AgentEnd):
                return


@pytest.mark.parametrize("max_buffer_size", [16, math.inf])
async def test_a_reader_that_keeps_up_gets_every_event_in_order(
    autojump_clock: trio.testing.MockClock, max_buffer_size: float
) -> None:
    agent = make_agent(_progress_script(), [PROGRESS], token_delay=0.5)
    heard = record(agent)
    received: list[pt.AgentEvent] = []
    async with agent.events(max_buffer_size=max_buffer_size) as rx, trio.open_nursery() as n:
        n.start_soon(_read_until_agent_end, rx, received)
        await agent.prompt("go")
    assert _same(received, heard)  # nothing dropped, nothing reordered
    assert [e.type for e in _lifecycle(received)] == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end",
        "tool_execution_start", "tool_execution_end", "message_start", "message_end", "turn_end",
        "turn_start", "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    kinds = {type(e) for e in received}
    assert pt.MessageUpdate in kinds and pt.ToolExecutionUpdate in kinds
    assert_event_grammar(received)


async def test_a_waiting_reader_gets_updates_even_without_a_buffer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """max_buffer_size=0: an update goes straight to a reader blocked in receive()."""
    agent = make_agent(_progress_script(), [PROGRESS], token_delay=0.5)
    heard = record(agent)
    received: list[pt.AgentEvent] = []
    async with agent.events(max_buffer_size=0) as rx, trio.open_nursery() as nursery:
        nursery.start_soon(_read_until_agent_end, rx, received)
        await agent.prompt("go")
    progress = [e for e in heard if isinstance(e, pt.ToolExecutionUpdate)]
    assert len(progress) == 3  # each sent after a sleep, while the reader waits
    assert _same([e for e in received if isinstance(e, pt.ToolExecutionUpdate)], progress)
    assert _same(_lifecycle(received), _lifecycle(heard))


async def test_updates_are_dropped_only_for_the_reader_that_lags(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent(_progress_script(), [PROGRESS], token_delay=0.5)
    heard = record(agent)
    fast: list[pt.AgentEvent] = []
    async with (
        agent.events(max_buffer_size=2) as slow_rx,
        agent.events(max_buffer_size=16) as fast_rx,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(_read_until_agent_end, fast_rx, fast)
        await agent.prompt("go")  # nobody reads slow_rx meanwhile: the run is not held up
        slow = drain(slow_rx)
    assert _same(fast, heard)
    assert _same(_lifecycle(slow), _lifecycle(heard))  # every lifecycle event, in order
    assert any(isinstance(e, UPDATES) for e in heard)
    assert not any(isinstance(e, UPDATES) for e in slow)  # its buffer was full from the start
    assert_event_grammar(slow)


async def test_a_reader_that_falls_behind_then_catches_up_loses_only_updates(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent(_progress_script(), [PROGRESS], token_delay=0.5)
    heard = record(agent)
    received: list[pt.AgentEvent] = []

    async def sluggish(rx: trio.MemoryReceiveChannel[pt.AgentEvent]) -> None:
        with trio.fail_after(60):
            async for event in rx:
                received.append(event)
                if isinstance(event, pt.AgentEnd):
                    return
                await trio.sleep(0.75)  # slower than the tokens (0.5) and the tool steps (1)

    async with agent.events(max_buffer_size=3) as rx, trio.open_nursery() as nursery:
        nursery.start_soon(sluggish, rx)
        await agent.prompt("go")
    assert _same(_lifecycle(received), _lifecycle(heard))
    updates = [e for e in received if isinstance(e, UPDATES)]
    all_updates = [e for e in heard if isinstance(e, UPDATES)]
    assert 0 < len(updates) < len(all_updates)  # some kept, some dropped
    assert _same(updates, [e for e in all_updates if any(e is u for u in updates)])  # in order


async def test_the_subscription_spans_runs_and_ends_with_its_block() -> None:
    agent = make_agent([faux.assistant_message("one"), faux.assistant_message("two"),
                        faux.assistant_message("three")])  # fmt: skip
    async with agent.events(max_buffer_size=math.inf) as rx:
        await agent.prompt("first")
        await agent.prompt("second")
        types = [e.type for e in drain(rx)]
    assert types.count("agent_start") == 2 and types.count("agent_end") == 2
    assert types[-1] == "agent_end"
    assert not reachable(agent, rx)  # the agent let go of it
    with pytest.raises(trio.ClosedResourceError):
        rx.receive_nowait()
    heard = record(agent)
    await agent.prompt("third")  # runs on without the old subscriber
    assert heard[-1].type == "agent_end" and agent.state.error_message is None


async def test_a_block_left_by_an_exception_unsubscribes_too() -> None:
    agent = make_agent([faux.assistant_message("x")])
    with pytest.raises(KeyError):
        async with agent.events() as rx:
            assert reachable(agent, rx)
            raise KeyError("reader failed")
    assert not reachable(agent, rx)
    await agent.prompt("go")
    assert agent.state.error_message is None


async def test_negative_buffer_size_is_refused() -> None:
    agent = make_agent([])
    with pytest.raises(ValueError, match="max_buffer_size"):
        async with agent.events(max_buffer_size=-1):
            pass


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
