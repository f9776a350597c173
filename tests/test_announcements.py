"""Messages a run takes into its transcript (prompts, queued messages) are announced in the
order it took them, also when an abort cuts the announcing short."""

from __future__ import annotations

import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .support import make_agent, make_scripted_agent


def _text(message: pt.AgentMessage) -> str:
    content = getattr(message, "content", "")
    return content if isinstance(content, str) else "".join(b.text for b in content)


def _user_texts(messages: list[pt.AgentMessage]) -> list[str]:
    return [_text(m) for m in messages if isinstance(m, pt.UserMessage)]


async def test_taken_messages_start_in_the_order_taken(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The order the taken messages start in is the order the run took them: prompts first,
    # then a steering batch.
    agent = make_agent(
        [faux.assistant_message("one two three"), faux.assistant_message("done")],
        (),
        token_delay=0.1,
        steering_mode="all",
    )
    started: list[str] = []
    agent.subscribe(
        lambda e: (
            started.append(_text(e.message))
            if isinstance(e, pt.MessageStart) and isinstance(e.message, pt.UserMessage)
            else None
        )
    )
    prompts = [f"p{i}" for i in range(5)]
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, [pt.UserMessage(text) for text in prompts])
        await trio.sleep(0.15)  # the first answer is streaming
        for i in range(4):
            agent.steer(f"s{i}")
    expected = [*prompts, "s0", "s1", "s2", "s3"]
    assert started == expected
    assert _user_texts(agent.state.messages) == expected


async def test_an_abort_mid_announcement_ends_the_rest_in_order() -> None:
    # Cut short while it announces its prompts, the run closes the transcript with the ones
    # it had not started yet, in the order they were given.
    agent, scripted = make_scripted_agent([faux.assistant_message("never")], ())
    held = trio.Event()

    async def hold_on_p1(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageStart) and _text(event.message) == "p1":
            held.set()
            await trio.sleep_forever()

    agent.subscribe(hold_on_p1)
    prompts = [f"p{i}" for i in range(6)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, [pt.UserMessage(text) for text in prompts])
        await held.wait()
        agent.abort()
    assert _user_texts(agent.state.messages) == prompts
    assert scripted.call_count == 0
