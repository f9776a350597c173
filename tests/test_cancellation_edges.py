"""Edge cases of cancellation and concurrency: plain Cancelled out of every path, failures
during a cancellation counted as an abort, listeners never entered concurrently, sync tools'
updates kept inside the run, instant models letting other tasks in."""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .grammar import assert_event_grammar
from .support import SLEEP, NullSink, escaped_from_prompt, faux, make_agent, sleeps
from .transcript import assert_transcript_valid


async def test_caller_gets_a_plain_cancelled_from_a_parallel_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([sleeps(5, 5, 5)])
    assert await escaped_from_prompt(agent) == [trio.Cancelled]  # not a BaseExceptionGroup


async def test_run_agent_loop_lets_out_a_plain_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    scripted = faux.FauxModel([sleeps(5, 5)])
    context = pt.AgentContext("", [], [SLEEP])
    config = pt.AgentLoopConfig(model=scripted.model, stream_fn=scripted)
    with trio.move_on_after(1):
        with pytest.raises(trio.Cancelled):
            await pt.run_agent_loop([pt.UserMessage("go")], context, config, NullSink())


async def test_exception_in_agent_loop_body_is_not_wrapped() -> None:
    scripted = faux.FauxModel([sleeps(0), faux.assistant_message("x")])
    context = pt.AgentContext("", [], [SLEEP])
    config = pt.AgentLoopConfig(model=scripted.model, stream_fn=scripted)
    with pytest.raises(KeyError):  # a group would not match
        async with pt.agent_loop([pt.UserMessage("go")], context, config) as events:
            async for _ in events:
                raise KeyError("reader failed")
    assert_transcript_valid(context.messages, aborted=True)


async def test_failure_while_cancelling_counts_as_abort(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def events(model: pt.Model) -> AsyncGenerator[pt.StreamEvent, None]:
        yield pt.StreamStart(pt.AssistantMessage([], model.api, model.provider, model.id))
        try:
            await trio.sleep(10)
        finally:
            raise OSError("connection reset while closing")

    scripted_model = pt.get_model("faux", "faux-1")
    agent = pt.Agent(
        pt.AgentState(model=scripted_model),
        stream_fn=lambda m, c, o: aclosing(events(m)),
    )
    with trio.move_on_after(1) as scope:
        await agent.prompt("go")
    assert scope.cancelled_caught
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "aborted"


async def test_sync_tool_updates_stay_inside_the_run() -> None:
    release = threading.Event()
    reported = threading.Event()

    def slow(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        on_update(pt.ToolResult([pt.TextContent("first")]))
        reported.set()
        release.wait(10)
        on_update(pt.ToolResult([pt.TextContent("too late")]))  # the run is over by now
        return pt.ToolResult([pt.TextContent("done")])

    tool = pt.AgentTool("slow", "Slow", "slow", {"type": "object"}, slow)
    agent = make_agent([faux.assistant_message([faux.tool_call("slow", {}, id="c1")])], [tool])
    agent.follow_up("later")
    agent.steer("x")
    agent.clear_all_queues()
    updates: list[str] = []
    listener_cancelled: list[bool] = []

    async def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.ToolExecutionUpdate):
            updates.append(event.partial_result.content[0].text)  # type: ignore[union-attr]
            try:
                await trio.sleep(10)  # a slow listener: it must be cancelled with the run
            except trio.Cancelled:
                listener_cancelled.append(True)
                raise

    agent.subscribe(listener)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "go")
            await trio.to_thread.run_sync(reported.wait)
            await trio.sleep(0.05)
            agent.abort()
        release.set()
        await trio.sleep(0.1)  # the abandoned thread reports again: nobody must hear it
    assert updates == ["first"]
    assert listener_cancelled == [True]
    assert_transcript_valid(agent.state.messages, aborted=True)


async def test_failing_listener_does_not_starve_events_channels(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([sleeps(5)])
    broken = False

    def fragile(event: pt.AgentEvent) -> None:
        if broken:
            raise ConnectionError("websocket closed")

    agent.subscribe(fragile)
    received: list[pt.AgentEvent] = []
    async with agent.events(max_buffer_size=1000) as rx, trio.open_nursery() as nursery:

        async def read() -> None:
            async for event in rx:
                received.append(event)
                if event.type == "agent_end":
                    return

        nursery.start_soon(read)
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(1)
        broken = True
        agent.abort()
    assert received[-1].type == "agent_end"
    assert_event_grammar(received)


async def test_abort_while_the_answer_is_delivered_adds_no_aborted_message() -> None:
    agent = make_agent([faux.assistant_message("the answer")])

    async def abort_on_answer(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd) and isinstance(event.message, pt.AssistantMessage):
            agent.abort()
            await trio.sleep(1)

    agent.subscribe(abort_on_answer)
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    await agent.prompt("go")
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    assert agent.state.messages[-1].stop_reason == "stop"  # type: ignore[union-attr]
    assert agent.state.error_message is None
    assert [e.type for e in events][-2:] == ["turn_end", "agent_end"]


async def test_listeners_are_never_entered_concurrently(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([sleeps(1, 1, 1, 1), faux.assistant_message("done")])
    inside = 0
    overlaps = 0

    async def stateful(event: pt.AgentEvent) -> None:
        nonlocal inside, overlaps
        inside += 1
        overlaps += inside > 1
        await trio.sleep(0.01)  # e.g. a socket write
        inside -= 1

    agent.subscribe(stateful)
    await agent.prompt("go")
    assert overlaps == 0


async def test_a_run_on_an_instant_model_lets_other_tasks_in() -> None:
    async def instant(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return pt.ToolResult([])

    noop = pt.AgentTool("noop", "n", "n", {"type": "object"}, instant)
    script: list[faux.FauxResponse] = [
        faux.assistant_message([faux.tool_call("noop", {}, id=f"c{i}")]) for i in range(50)
    ]
    agent = make_agent([*script, faux.assistant_message("done")], [noop])
    ticks = 0
    async with trio.open_nursery() as nursery:

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await trio.lowlevel.checkpoint()

        nursery.start_soon(ticker)
        await agent.prompt("go")
        nursery.cancel_scope.cancel()
    assert ticks >= 50  # at least one schedule point per model call


async def test_start_then_abort_always_finds_the_run() -> None:
    agent = make_agent([sleeps(100)])
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "go")
        assert agent.state.is_streaming
        agent.abort()
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]


async def test_wait_for_idle_inside_the_run_is_an_error_not_a_deadlock() -> None:
    agent = make_agent([faux.assistant_message("x")])

    async def waits(event: pt.AgentEvent) -> None:
        if event.type == "turn_end":
            await agent.wait_for_idle()

    agent.subscribe(waits)
    with trio.fail_after(5):
        await agent.prompt("go")
    assert agent.state.error_message == "wait_for_idle() called from inside the run it waits for"


async def test_channel_reader_sees_a_whole_grammar_after_an_interrupted_send(
    autojump_clock: trio.testing.MockClock,
) -> None:
    scripted = faux.FauxModel([sleeps(1, 1, 100)])
    context = pt.AgentContext("", [], [SLEEP])
    config = pt.AgentLoopConfig(model=scripted.model, stream_fn=scripted)
    seen: list[pt.AgentEvent] = []
    with trio.move_on_after(3):
        async with pt.agent_loop([pt.UserMessage("go")], context, config, max_buffer_size=0) as rx:
            async for event in rx:
                seen.append(event)
                await trio.sleep(0.4)  # a slow reader: the run waits in send() a lot
    assert seen  # the reader got some of it before the deadline
    assert_transcript_valid(context.messages, aborted=True)


def test_images_need_a_text_prompt() -> None:
    agent = pt.Agent()
    with pytest.raises(ValueError, match="images"):
        trio.run(agent.prompt, pt.UserMessage("x"), [pt.ImageContent("AA==", "image/png")])


async def test_wait_for_idle_from_a_task_around_the_prompt() -> None:
    """A watchdog in a nursery opened around prompt() is outside the run: it may wait."""
    agent = make_agent([sleeps(0.01), faux.assistant_message("done")])
    waited: list[bool] = []
    async with trio.open_nursery() as nursery:

        async def watchdog() -> None:
            await trio.sleep(0.001)
            await agent.wait_for_idle()
            waited.append(agent.state.is_streaming)

        nursery.start_soon(watchdog)
        await agent.prompt("go")
    assert waited == [False]
