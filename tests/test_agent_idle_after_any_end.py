"""An agent is idle once its run (or compaction) is over, however it ended, and an idle agent
holds nothing of the task that last ran it: a ``KeyboardInterrupt`` during the run's final
recorder flush, the caller's nurseries, ``wait_for_idle()`` from a nursery around
``compact()``."""

from __future__ import annotations

import contextvars
import gc
import weakref

import pytest
import trio
import trio.testing

import pi_trio as pt

from .support import faux, make_agent, make_scripted_agent

REQUEST: contextvars.ContextVar[object] = contextvars.ContextVar("REQUEST")


class _InterruptedFlush:
    """A recorder whose first flush is interrupted (a second Ctrl-C, say)."""

    def __init__(self) -> None:
        self.interrupted = False

    def record(self, event: pt.AgentEvent) -> bool:
        return False

    async def flush(self) -> None:
        await trio.lowlevel.checkpoint()
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt

    def queued(self, kind: str, message: pt.AgentMessage) -> None:
        pass

    def cleared(self, kind: str) -> None:
        pass


async def test_a_keyboard_interrupt_in_the_final_flush_leaves_the_agent_idle() -> None:
    agent, _ = make_scripted_agent(
        [faux.assistant_message("one"), faux.assistant_message("two")],
        recorder=_InterruptedFlush(),
    )
    with pytest.raises(KeyboardInterrupt):
        await agent.prompt("first")
    assert not agent.is_running
    with trio.fail_after(5):
        await agent.wait_for_idle()
    await agent.prompt("second")
    assert agent.state.messages[-1].content[0].text == "two"  # type: ignore[union-attr]


class _Body:
    pass


async def test_an_idle_agent_keeps_nothing_of_the_task_that_last_ran_it() -> None:
    agent = make_agent([faux.assistant_message("ok")])
    bodies: list[weakref.ref[_Body]] = []

    async def handler() -> None:
        body = _Body()
        bodies.append(weakref.ref(body))
        REQUEST.set(body)  # a request's data, in its task's context
        async with trio.open_nursery() as beside:  # a watchdog beside the run, say
            beside.start_soon(trio.lowlevel.checkpoint)
            await agent.prompt("hi")

    async with trio.open_nursery() as server:
        server.start_soon(handler)
    del server
    gc.collect()
    assert not agent.is_running
    assert bodies[0]() is None


async def test_wait_for_idle_from_a_nursery_around_compact_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent, _ = make_scripted_agent(
        [faux.assistant_message("hi"), faux.assistant_message("the summary")],
        token_delay=0.1,
        compaction=pt.Compaction(keep_recent_tokens=1),
    )
    await agent.prompt("hello " * 50)
    waited = []

    async def waiter() -> None:
        await trio.testing.wait_all_tasks_blocked()
        await agent.wait_for_idle()
        waited.append(agent.is_running)

    async with trio.open_nursery() as around:
        around.start_soon(waiter)
        summary = await agent.compact()
    assert summary is not None and summary.summary == "the summary"
    assert waited == [False]
