"""Every subscriber sees a well-formed run, whatever fails or is aborted (issue 12).

Each listener and each ``events()`` channel must get every event of a run once, in order, with
every start paired with its end and exactly one ``agent_end``, last, whose messages are the
run's; a listener's failure is isolated from the others; a cancellation that interrupts a
delivery is made good in the close-out.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .grammar import assert_event_grammar
from .support import make_agent
from .transcript import assert_transcript_valid

SLEEP_SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}


async def _sleep(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent("woke")])


SLEEP = pt.AgentTool("sleep", "Sleep", "sleeps", SLEEP_SCHEMA, _sleep)


def _sleeps(*seconds: float) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.tool_call("sleep", {"s": s}, id=f"call_{i}") for i, s in enumerate(seconds, 1)]
    )


def _assert_well_formed(events: list[pt.AgentEvent], agent: pt.Agent) -> None:
    assert_event_grammar(events)
    assert len(events) == len({id(e) for e in events}), "an event was delivered twice"
    end = events[-1]
    assert isinstance(end, pt.AgentEnd)
    # agent_end carries the run's messages, which are the tail of the transcript
    assert list(agent.state.messages[-len(end.messages) :]) == list(end.messages)


class _Raising:
    """A listener that records each event, then raises on the ones it is told to."""

    def __init__(self, when: Any) -> None:
        self.events: list[pt.AgentEvent] = []
        self.when = when

    def __call__(self, event: pt.AgentEvent) -> None:
        self.events.append(event)
        if self.when(event):
            raise RuntimeError(f"listener broke on {event.type}")


async def test_a_listener_raising_at_message_start_does_not_starve_the_next_one() -> None:
    agent = make_agent([faux.assistant_message("hello there")], [SLEEP])
    first = _Raising(
        lambda e: isinstance(e, pt.MessageStart) and isinstance(e.message, pt.AssistantMessage)
    )
    second: list[pt.AgentEvent] = []
    agent.subscribe(first)
    agent.subscribe(second.append)
    await agent.prompt("hi")
    _assert_well_formed(second, agent)
    _assert_well_formed(first.events, agent)
    # pi's rule holds: the listener's failure ends the run with its text
    assert agent.state.error_message == "listener broke on message_start"
    assert_transcript_valid(agent.state.messages)


async def test_a_listener_that_always_raises_leaves_the_others_a_complete_run() -> None:
    agent = make_agent([_sleeps(1, 1), faux.assistant_message("done")], [SLEEP])
    broken = _Raising(lambda e: True)
    seen: list[pt.AgentEvent] = []
    agent.subscribe(broken)
    agent.subscribe(seen.append)
    async with agent.events() as rx:
        await agent.prompt("hi")
        channel = [rx.receive_nowait() for _ in range(rx.statistics().current_buffer_used)]
    for events in (seen, broken.events, channel):
        _assert_well_formed(events, agent)
    assert agent.state.error_message == "listener broke on agent_start"


async def test_a_listener_raising_on_agent_end_is_recorded_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = make_agent([faux.assistant_message("hello")], [SLEEP])
    broken = _Raising(lambda e: isinstance(e, pt.AgentEnd))
    other: list[pt.AgentEvent] = []
    agent.subscribe(broken)
    agent.subscribe(other.append)
    with caplog.at_level(logging.ERROR, logger="pi_trio"):
        await agent.prompt("hi")
    # pi records the failure as an error assistant message and reports it in error_message
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"
    assert last.error_message == agent.state.error_message == "listener broke on agent_end"
    # in pi's shape for a failed run (agent.ts handleRunFailure): one empty text block
    assert pt.to_json(last)["content"] == [{"type": "text", "text": ""}]
    assert any("agent_end" in r.getMessage() and r.exc_info for r in caplog.records)
    # Deliberate difference from pi: pi delivers agent_end a second time (with the failure
    # message); here every subscriber gets exactly one agent_end, the one already delivered.
    assert [type(e) for e in other].count(pt.AgentEnd) == 1
    assert_event_grammar(other)
    assert_transcript_valid(agent.state.messages)


def _with_a_slow_listener() -> tuple[pt.Agent, list[pt.AgentEvent], list[pt.AgentEvent]]:
    """An agent (two tool calls of 1 s, then a streamed answer) whose first listener takes
    0.1 s per event and whose second records; returns the agent and both records."""
    agent = make_agent(
        [_sleeps(1, 1), faux.assistant_message("all done now")], [SLEEP], token_delay=0.01
    )
    slow: list[pt.AgentEvent] = []
    after: list[pt.AgentEvent] = []

    async def slow_listener(event: pt.AgentEvent) -> None:
        slow.append(event)
        await trio.sleep(0.1)

    agent.subscribe(slow_listener)
    agent.subscribe(after.append)
    return agent, slow, after


@pytest.mark.parametrize("abort_at", [0.05, 0.15, 0.25, 1.05, 1.15, 2.05, 3.05, 3.15])
async def test_abort_during_a_slow_listener_leaves_every_subscriber_well_formed(
    autojump_clock: trio.testing.MockClock, abort_at: float
) -> None:
    """A listener that takes 0.1 s per event; the abort lands inside one of its awaits."""
    agent, slow, after = _with_a_slow_listener()
    async with agent.events() as rx, trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "hi")
        await trio.sleep(abort_at)
        agent.abort()
        await agent.wait_for_idle()
        channel = [rx.receive_nowait() for _ in range(rx.statistics().current_buffer_used)]
    for events in (slow, after, channel):
        _assert_well_formed(events, agent)
    # the subscribers saw the same run
    assert [type(e) for e in after] == [type(e) for e in channel] == [type(e) for e in slow]
    assert_transcript_valid(agent.state.messages, aborted=True)
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "aborted"


@pytest.mark.parametrize("deadline", [0.05, 0.35, 1.25, 2.5])
async def test_a_deadline_during_a_slow_listener_closes_the_run_the_same_way(
    autojump_clock: trio.testing.MockClock, deadline: float
) -> None:
    agent, slow, after = _with_a_slow_listener()
    with trio.move_on_after(deadline) as scope:
        await agent.prompt("hi")
    assert scope.cancelled_caught
    for events in (slow, after):
        _assert_well_formed(events, agent)
    assert_transcript_valid(agent.state.messages, aborted=True)


def _interrupting(tool_body: Any) -> pt.AgentTool:
    async def run(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return await tool_body(params)

    return pt.AgentTool("boom", "Boom", "raises", SLEEP_SCHEMA, run)


@pytest.mark.parametrize("parallel", [True, False])
async def test_keyboard_interrupt_in_a_tool_comes_out_plain(parallel: bool) -> None:
    async def body(params: Any) -> pt.ToolResult:
        await trio.sleep(params["s"])
        raise KeyboardInterrupt

    boom = _interrupting(body)
    calls = [faux.tool_call("boom", {"s": 0.0}, id="b1"), faux.tool_call("sleep", {"s": 5}, id="s")]
    script = [faux.assistant_message(calls), faux.assistant_message("never")]
    agent = make_agent(
        script, [SLEEP, boom], tool_execution="parallel" if parallel else "sequential"
    )
    seen: list[pt.AgentEvent] = []
    agent.subscribe(seen.append)
    with pytest.raises(KeyboardInterrupt) as info:
        await agent.prompt("hi")
    assert type(info.value) is KeyboardInterrupt  # not an exception group
    assert_transcript_valid(agent.state.messages, aborted=True)
    _assert_well_formed(seen, agent)
    assert agent.state.is_streaming is False


async def test_keyboard_interrupt_from_a_sync_tool_in_a_thread_comes_out_plain() -> None:
    def blocking(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        raise KeyboardInterrupt

    tool = pt.AgentTool("block", "Block", "blocks", SLEEP_SCHEMA, blocking)
    calls = [faux.tool_call("block", {"s": 0}, id="k"), faux.tool_call("sleep", {"s": 5}, id="s")]
    agent = make_agent([faux.assistant_message(calls)], [SLEEP, tool])
    with pytest.raises(KeyboardInterrupt) as info:
        await agent.prompt("hi")
    assert type(info.value) is KeyboardInterrupt
    assert_transcript_valid(agent.state.messages, aborted=True)


async def test_a_stalled_events_reader_is_dropped_at_its_backlog() -> None:
    """max_buffer_size=4 and a reader that never reads: the backlog stays bounded, then the
    reader learns it was dropped (after reading what was queued)."""
    agent = make_agent([faux.assistant_message("one two three") for _ in range(200)], [SLEEP])
    async with agent.events(max_buffer_size=4, max_backlog=64) as rx:
        for _ in range(200):
            await agent.prompt("hi")
        assert rx.statistics().current_buffer_used <= 64
        got = 0
        with pytest.raises(pt.EventsOverflowError, match="64 events behind"):
            while True:
                rx.receive_nowait()
                got += 1
        assert got <= 64
    # the agent no longer feeds it: more runs leave nothing behind
    await agent.prompt("again")


async def test_a_blocking_events_reader_holds_the_run_and_loses_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([faux.assistant_message("one two three four five six")], [SLEEP])
    got: list[pt.AgentEvent] = []
    blocking = agent.events(max_buffer_size=2, on_overflow="block")
    async with blocking as rx, trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "hi")
        await trio.testing.wait_all_tasks_blocked()
        assert agent.state.is_streaming  # waiting for the reader
        assert rx.statistics().current_buffer_used == 2
        async for event in rx:
            got.append(event)
            await trio.sleep(0.01)
            if isinstance(event, pt.AgentEnd):
                break
    _assert_well_formed(got, agent)
    assert rx.dropped == 0
    assert sum(isinstance(e, pt.MessageUpdate) for e in got) > 2


async def test_abort_reaches_a_run_blocked_on_its_reader(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([faux.assistant_message("one two three four five six")], [SLEEP])
    blocking = agent.events(max_buffer_size=2, on_overflow="block")
    async with blocking as rx, trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "hi")
        await trio.testing.wait_all_tasks_blocked()
        agent.abort()
        # the close-out may wait for the reader too, within its grace period: read
        events = [event async for event in _until_end(rx)]
    _assert_well_formed(events, agent)
    assert_transcript_valid(agent.state.messages, aborted=True)


async def _until_end(rx: Any) -> Any:
    async for event in rx:
        yield event
        if isinstance(event, pt.AgentEnd):
            return


def test_events_bounds_are_checked() -> None:
    agent = pt.Agent()
    with pytest.raises(ValueError, match="max_backlog"):
        trio.run(_enter, agent.events(8, max_backlog=4))
    with pytest.raises(ValueError, match="on_overflow"):
        trio.run(_enter, agent.events(8, on_overflow="drop"))  # type: ignore[arg-type]


async def _enter(manager: Any) -> None:
    async with manager:
        pass


_SIGINT_SCRIPT = """
import os, signal, sys, trio
import pi_trio as pt
from pi_trio.providers import faux

# a suite started in the background inherits an ignored SIGINT: this test needs Ctrl-C's default
signal.signal(signal.SIGINT, signal.default_int_handler)

SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}

async def nap(tool_call_id, params, on_update):
    if params["s"] == 0:
        os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C while the batch runs
    await trio.sleep(params["s"] or 10)
    return pt.ToolResult([pt.TextContent("woke")])

def doze(tool_call_id, params, on_update):  # a sync tool, in a worker thread
    import time
    time.sleep(0.2)
    return pt.ToolResult([pt.TextContent("dozed")])

tools = [pt.AgentTool("nap", "Nap", "naps", SCHEMA, nap),
         pt.AgentTool("doze", "Doze", "dozes", SCHEMA, doze)]
calls = [faux.tool_call("doze", {"s": 1}, id="d"), faux.tool_call("nap", {"s": 5}, id="a"),
         faux.tool_call("nap", {"s": 0}, id="b")]
scripted = faux.FauxModel([faux.assistant_message(calls), faux.assistant_message("never")])
agent = pt.Agent(pt.AgentState(model=scripted.model, tools=tools), stream_fn=scripted)
async def main():
    try:
        await agent.prompt("go")
    except BaseException as exc:  # what the caller of prompt() sees
        print("raised", type(exc).__name__)
        raise

try:
    trio.run(main)
except KeyboardInterrupt:
    pass
messages = agent.state.messages
results = {m.tool_call_id for m in messages if isinstance(m, pt.ToolResultMessage)}
print("results", sorted(results))
print("last", messages[-1].stop_reason, agent.state.is_streaming)
"""


def test_a_real_sigint_during_a_parallel_batch_raises_plain_keyboard_interrupt(
    tmp_path: Any,
) -> None:
    import os
    import pathlib
    import subprocess
    import sys

    script = tmp_path / "sigint.py"
    script.write_text(_SIGINT_SCRIPT)
    checkout = str(pathlib.Path(__file__).resolve().parents[1])  # this checkout's pi_trio
    env = {**os.environ, "PYTHONPATH": checkout}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "raised KeyboardInterrupt", done.stdout + done.stderr
    assert lines[1] == "results ['a', 'b', 'd']"  # the close-out answered every call
    assert lines[2] == "last aborted False"
