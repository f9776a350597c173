"""The close-out of an aborted batch: a synchronous fast path that hands over to a slow one.

``close_run`` delivers the closing events by direct calls while every listener is a plain
function, and only when one returns an awaitable (or raises ``KeyboardInterrupt``) part-way
through does it continue in a shielded coroutine, from that very event. These tests pin what
the hand-over must keep: every subscriber gets every closing event once and in order, the
interrupted event is sent again, and the grace period still bounds the waits.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .grammar import check_events
from .support import assert_aborted, faux, make_agent, sleeps

CLOSING_AFTER_BATCH = [
    "tool_execution_end",
    "tool_execution_end",
    "tool_execution_end",
    "message_start",
    "message_end",
    "message_start",
    "message_end",
    "message_start",
    "message_end",
    "turn_end",
    "turn_start",
    "message_start",
    "message_end",
    "turn_end",
    "agent_end",
]
"""What an abort of three parked tools closes with (pi's aborted shape)."""


async def _abort_when_parked(agent: pt.Agent) -> None:
    """Run a prompt, abort it once its three tools are parked; return once it is idle."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        assert len(agent.state.pending_tool_calls) == 3
        agent.abort()
        await agent.wait_for_idle()


def _closing(log: list[pt.AgentEvent]) -> list[str]:
    """The closing events: everything after the batch's three tool_execution_start."""
    starts = [i for i, e in enumerate(log) if isinstance(e, pt.ToolExecutionStart)]
    return [e.type for e in log[starts[-1] + 1 :]]


async def test_plain_listeners_get_the_closing_events_without_a_schedule_point(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # An instrument notes every step the run's task ends while the closing events go out
    # (from the first to agent_end): the close-out is one synchronous step, so none.
    agent = make_agent([sleeps(10, 10, 10), faux.assistant_message("never")])
    log: list[pt.AgentEvent] = []
    closing: list[trio.lowlevel.Task] = []  # the run's task, once the first closing event is out
    yielded: list[int] = []  # how many events were out each time it yielded in between
    aborted = False

    class StepWatch(trio.abc.Instrument):
        def after_task_step(self, task: trio.lowlevel.Task) -> None:
            if closing and task is closing[0] and log[-1].type != "agent_end":
                yielded.append(len(log))

    def listener(event: pt.AgentEvent) -> None:
        log.append(event)
        if aborted and not closing:
            closing.append(trio.lowlevel.current_task())

    agent.subscribe(listener)
    watch = StepWatch()
    trio.lowlevel.add_instrument(watch)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "go")
            await trio.testing.wait_all_tasks_blocked()
            aborted = True
            agent.abort()
            await agent.wait_for_idle()
    finally:
        trio.lowlevel.remove_instrument(watch)
    assert _closing(log) == CLOSING_AFTER_BATCH
    assert yielded == []
    assert_aborted(agent)


class _AfterAbort:
    """A listener that records every event and, once ``armed`` (just before the abort),
    hands each closing event with its index to ``action``, returning what it returns (None,
    or an awaitable the close-out then waits for)."""

    def __init__(self, action: Any) -> None:
        self.log: list[pt.AgentEvent] = []
        self.armed = False
        self._seen = 0
        self._action = action

    def __call__(self, event: pt.AgentEvent) -> Any:
        self.log.append(event)
        if not self.armed:
            return None
        index, self._seen = self._seen, self._seen + 1
        return self._action(index, event)


@pytest.mark.parametrize("waits_on", [0, 4, 9, 14])
async def test_a_listener_that_waits_on_one_closing_event_keeps_the_rest_in_order(
    waits_on: int, autojump_clock: trio.testing.MockClock
) -> None:
    # The first listener returns an awaitable for one closing event only (the first, a tool
    # result's message_end, the batch's turn_end, agent_end): from there the close-out goes on
    # in its shielded coroutine. Both listeners get every closing event once, in pi's order,
    # and the waiting listener's await runs to its end (it is not left unawaited).
    agent = make_agent([sleeps(10, 10, 10), faux.assistant_message("never")])
    second: list[pt.AgentEvent] = []
    finished: list[str] = []

    def wait_on_one(index: int, event: pt.AgentEvent) -> Any:
        if index != waits_on:
            return None

        async def slow() -> None:
            await trio.sleep(1)
            finished.append(event.type)

        return slow()

    waits = _AfterAbort(wait_on_one)
    agent.subscribe(waits)
    agent.subscribe(second.append)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        waits.armed = True
        agent.abort()
        await agent.wait_for_idle()
    first = waits.log
    assert finished == [CLOSING_AFTER_BATCH[waits_on]]
    for log in (first, second):
        assert _closing(log) == CLOSING_AFTER_BATCH
        assert check_events(log) == []
    assert first == second
    assert_aborted(agent)


@pytest.mark.parametrize("raises_on", [0, 5, 14])
async def test_a_keyboard_interrupt_on_a_closing_event_is_sent_again_then_raised(
    raises_on: int, autojump_clock: trio.testing.MockClock
) -> None:
    # A plain listener raises KeyboardInterrupt on one closing event: the event is sent again
    # (the sink resumes with the listeners after the one that raised), every later closing
    # event is still delivered to everyone, and prompt() raises it, plain, at the end.
    agent = make_agent([sleeps(10, 10, 10), faux.assistant_message("never")])
    second: list[pt.AgentEvent] = []

    def interrupt_on_one(index: int, event: pt.AgentEvent) -> None:
        if index == raises_on:
            raise KeyboardInterrupt

    interrupts = _AfterAbort(interrupt_on_one)
    agent.subscribe(interrupts)
    agent.subscribe(second.append)
    raised: list[BaseException] = []

    async def aborter() -> None:
        await trio.testing.wait_all_tasks_blocked()
        interrupts.armed = True
        agent.abort()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(aborter)
        try:
            await agent.prompt("go")
        except BaseException as exc:  # caught here: the test's nursery would wrap it
            raised.append(exc)
    assert len(raised) == 1
    assert type(raised[0]) is KeyboardInterrupt  # not an exception group
    for log in (interrupts.log, second):
        assert _closing(log) == CLOSING_AFTER_BATCH
        assert check_events(log) == []
    assert_aborted(agent)


async def test_the_grace_period_bounds_a_wait_part_way_through_the_closing_events(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A listener blocks (awaiting) on the fifth closing event: the close-out gives up after
    # close_timeout, the events after it are not delivered, the transcript is complete anyway.
    agent = make_agent([sleeps(10, 10, 10), faux.assistant_message("never")], close_timeout=2.0)

    async def stall() -> None:
        await trio.sleep_forever()

    stalls = _AfterAbort(lambda index, event: stall() if index == 4 else None)
    agent.subscribe(stalls)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        stalls.armed = True
        start = trio.current_time()
        agent.abort()
        await agent.wait_for_idle()
    log = stalls.log
    assert trio.current_time() - start == pytest.approx(2.0)
    assert _closing(log) == CLOSING_AFTER_BATCH[:5]
    assert_aborted(agent)
    results = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert len(results) == 3
