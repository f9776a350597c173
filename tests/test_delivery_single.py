"""Delivery to a single listener (its own path in ``Delivery.deliver_nowait``) keeps the rules
of many: a failure ends the run and the listener still sees a well-formed run; a cancellation in
its await is made good without sending it that event again; and the run is the same as when a
second listener makes delivery take the loop."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .grammar import assert_event_grammar
from .support import make_agent, strip_timestamps
from .test_delivery import SLEEP, _assert_well_formed, _Raising, _sleeps
from .transcript import assert_transcript_valid


@pytest.mark.parametrize("kind", [pt.AgentStart, pt.MessageUpdate, pt.ToolExecutionEnd])
async def test_the_only_listener_raising_ends_the_run_with_its_text(kind: type) -> None:
    agent = make_agent([_sleeps(1), faux.assistant_message("hello there")], [SLEEP])
    broken = _Raising(lambda e: type(e) is kind)
    agent.subscribe(broken)
    await agent.prompt("hi")
    _assert_well_formed(broken.events, agent)
    assert agent.state.error_message == f"listener broke on {kind.type}"
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"
    assert_transcript_valid(agent.state.messages)


@pytest.mark.parametrize("abort_at", [0.05, 0.15, 0.25, 1.05, 2.05, 2.15])
async def test_abort_in_the_only_listeners_await_sends_it_nothing_twice(
    autojump_clock: trio.testing.MockClock, abort_at: float
) -> None:
    agent = make_agent(
        [_sleeps(1), faux.assistant_message("all done now")], [SLEEP], token_delay=0.01
    )
    seen: list[pt.AgentEvent] = []

    async def slow(event: pt.AgentEvent) -> None:
        seen.append(event)
        await trio.sleep(0.1)

    agent.subscribe(slow)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "hi")
        await trio.sleep(abort_at)
        agent.abort()
        await agent.wait_for_idle()
    _assert_well_formed(seen, agent)  # no event twice, one agent_end, last
    assert_transcript_valid(agent.state.messages, aborted=True)


async def test_the_only_listener_awaiting_each_event_gets_all_in_order(
    autojump_clock: Any,
) -> None:
    agent = make_agent([faux.assistant_message("one two three")], [SLEEP])
    seen: list[pt.AgentEvent] = []

    async def listener(event: pt.AgentEvent) -> None:
        await trio.sleep(0.01)
        seen.append(event)

    agent.subscribe(listener)
    await agent.prompt("hi")
    assert_event_grammar(seen)
    assert [e.seq for e in seen] == sorted(e.seq for e in seen)  # type: ignore[type-var]
    assert sum(isinstance(e, pt.MessageUpdate) for e in seen) == 5  # start, 3 deltas, end


async def test_a_keyboard_interrupt_in_the_only_listener_is_not_sent_the_event_again() -> None:
    agent = make_agent([faux.assistant_message("one two three")], [SLEEP])
    seen: list[pt.AgentEvent] = []

    def listener(event: pt.AgentEvent) -> None:
        seen.append(event)
        if isinstance(event, pt.MessageUpdate) and seen[-2].type == "message_update":
            raise KeyboardInterrupt  # on the second update

    agent.subscribe(listener)
    with pytest.raises(KeyboardInterrupt):
        await agent.prompt("hi")
    _assert_well_formed(seen, agent)  # the interrupted update is not delivered twice
    assert_transcript_valid(agent.state.messages, aborted=True)


async def test_subscribing_and_unsubscribing_changes_who_is_the_only_listener() -> None:
    agent = make_agent([faux.assistant_message("one"), faux.assistant_message("two")] * 2, [SLEEP])
    first: list[pt.AgentEvent] = []
    second: list[pt.AgentEvent] = []
    drop_first = agent.subscribe(first.append)
    drop_second = agent.subscribe(second.append)
    drop_first()  # second is now the only one
    await agent.prompt("a")
    assert first == [] and second[-1].type == "agent_end"
    drop_second()  # nobody left
    await agent.prompt("b")
    assert first == [] and [e.type for e in second].count("agent_end") == 1
    agent.subscribe(first.append)  # first alone
    await agent.prompt("c")
    assert_event_grammar(first)
    assert [e.type for e in second].count("agent_end") == 1


async def _one_run(misbehaves: str, alone: bool) -> tuple[Any, ...]:
    agent = make_agent([_sleeps(0.01, 0.02), faux.assistant_message("all done now")])
    seen: list[Any] = []
    updates = 0

    async def listener(event: pt.AgentEvent) -> None:
        nonlocal updates
        seen.append(strip_timestamps(pt.to_json(event)))
        updates += isinstance(event, pt.MessageUpdate)
        if misbehaves == "raises" and updates == 3:
            raise ValueError("listener broke")
        if misbehaves == "ctrl-c" and updates == 3:
            raise KeyboardInterrupt
        if misbehaves == "aborts" and isinstance(event, pt.ToolExecutionStart):
            agent.abort()
        if misbehaves == "awaits":
            await trio.sleep(0.001)

    agent.subscribe(listener if misbehaves == "awaits" else _sync(listener))
    if not alone:
        agent.subscribe(lambda event: None)  # a second listener: delivery takes the loop
    escaped = None
    try:
        await agent.prompt("go")
    except KeyboardInterrupt as exc:
        escaped = type(exc)
    transcript = [strip_timestamps(pt.to_json(m)) for m in agent.state.messages]
    return seen, transcript, escaped, agent.state.error_message


def _sync(listener: Any) -> Any:
    """``listener`` (an async function that awaits nothing unless told to) as a plain one."""

    def plain(event: pt.AgentEvent) -> None:
        coroutine = listener(event)
        try:
            coroutine.send(None)
        except StopIteration:
            return
        raise AssertionError("the listener awaited")

    return plain


@pytest.mark.parametrize("misbehaves", ["no", "raises", "ctrl-c", "aborts", "awaits"])
async def test_one_listener_alone_gets_the_run_it_gets_beside_another(
    misbehaves: str, autojump_clock: trio.testing.MockClock
) -> None:
    alone = await _one_run(misbehaves, alone=True)
    beside_another = await _one_run(misbehaves, alone=False)
    assert alone == beside_another
    assert alone[0][-1]["type"] == "agent_end"
