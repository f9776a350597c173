"""Every ``events()`` channel sees ``seq`` increase, also when the run's next event waits for
room in a blocking channel while a queue change is announced: the event is numbered as it is
fed, to every channel at once, so the notice (numbered first) is ahead of it everywhere."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import pi_trio as pt

from .support import faux, make_agent


def _drain(rx: pt.agent.EventsReceiver) -> list[int]:
    numbers = []
    while True:
        try:
            event = rx.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return numbers
        assert event.seq is not None
        numbers.append(event.seq)


@pytest.mark.parametrize("slow_first", [True, False])
async def test_a_notice_during_a_blocked_delivery_keeps_every_channel_in_order(
    slow_first: bool, autojump_clock: trio.testing.MockClock
) -> None:
    agent = make_agent(
        [faux.assistant_message("one two three four five six")], (), token_delay=0.01
    )
    slow_options = {"max_buffer_size": 2, "on_overflow": "block"}
    async with (
        agent.events(**slow_options if slow_first else {}) as first,  # type: ignore[arg-type]
        agent.events(**{} if slow_first else slow_options) as second,  # type: ignore[arg-type]
    ):
        slow, fast = (first, second) if slow_first else (second, first)
        seen_slow: list[int] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "go")
            await trio.testing.wait_all_tasks_blocked()  # the run waits for room in `slow`
            assert agent.is_running
            agent.steer("later")  # announced at once, to every channel

            async def read_slow() -> None:
                async for event in slow:
                    assert event.seq is not None
                    seen_slow.append(event.seq)
                    if event.type == "agent_end":
                        return

            nursery.start_soon(read_slow)
        seen_fast = _drain(fast)
    for numbers in (seen_slow, seen_fast):
        assert numbers == sorted(set(numbers)), numbers
    assert len(seen_fast) > 10
