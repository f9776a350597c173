"""The synchronous-first event path: events to plain-function listeners are delivered without a
coroutine per event; a listener that returns an awaitable is awaited, and the listeners after
it still get the event, in order."""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

import trio
import trio.lowlevel

import pi_trio as pt
from pi_trio.providers import faux

from .support import make_agent


async def test_a_long_stream_to_plain_listeners_makes_no_coroutine_per_event() -> None:
    agent = make_agent([faux.assistant_message("x" * 2000)], (), chunker=list)
    seen: list[str] = []
    agent.subscribe(lambda event: seen.append(event.type))
    started: list[str] = []

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        # a coroutine's start and each of its resumptions (few: nothing here waits)
        if event == "call" and frame.f_code.co_flags & inspect.CO_COROUTINE:
            started.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        await agent.prompt("go")
    finally:
        sys.setprofile(None)
    assert seen.count("message_update") == 2002  # text_start, 2,000 deltas, text_end
    assert len(started) < 200, sorted(set(started))


async def test_an_awaiting_listener_is_awaited_and_the_next_ones_still_get_each_event() -> None:
    agent = make_agent([faux.assistant_message("x" * 5)], (), chunker=list)
    order: list[str] = []

    def first(event: pt.AgentEvent) -> None:
        order.append(f"1 {event.type}")

    async def second(event: pt.AgentEvent) -> None:
        await trio.lowlevel.checkpoint()
        order.append(f"2 {event.type}")

    def third(event: pt.AgentEvent) -> None:
        order.append(f"3 {event.type}")

    for listener in (first, second, third):
        agent.subscribe(listener)
    await agent.prompt("go")
    types_ = [entry.split()[1] for entry in order[::3]]
    assert order == [f"{n} {t}" for t in types_ for n in "123"]
    assert types_[0] == "agent_start" and types_[-1] == "agent_end"


async def test_a_failing_plain_listener_before_an_awaiting_one_still_fails_the_run() -> None:
    agent = make_agent([faux.assistant_message("x" * 3)], (), chunker=list)
    later: list[str] = []

    def failing(event: pt.AgentEvent) -> None:
        if event.type == "message_update":
            raise RuntimeError("listener broke")

    async def awaiting(event: pt.AgentEvent) -> None:
        await trio.lowlevel.checkpoint()
        later.append(event.type)

    agent.subscribe(failing)
    agent.subscribe(awaiting)
    await agent.prompt("go")
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage)
    assert last.stop_reason == "error" and "listener broke" in (last.error_message or "")
    assert "message_update" in later and later[-1] == "agent_end"
