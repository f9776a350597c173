"""The demo and chat in-process on a MockClock: what they measure and how Ctrl-C is handled."""

from __future__ import annotations

import io
from typing import Any

import trio
import trio.testing

from pi_trio.cli._agents import agent_factory
from pi_trio.cli._chat import HELP, ChatSession
from pi_trio.cli._demo import WEATHER, run_demo

from ..transcript import assert_transcript_valid


async def test_demo_shows_a_parallel_batch_steering_and_a_valid_aborted_transcript(
    autojump_clock: Any,
) -> None:
    out = io.StringIO()
    result = await run_demo(out)
    assert result.scripted and result.steered and result.aborted
    assert result.problems == []
    assert len(result.tool_seconds) == 3
    slowest = max(seconds for _, seconds in WEATHER.values())
    # on the mock clock the batch takes exactly as long as its slowest call
    assert abs(result.batch_wall - slowest) < 1e-6
    assert abs(result.sequential_seconds - sum(s for _, s in WEATHER.values())) < 1e-6
    assert result.messages_by_role == {"user": 5, "assistant": 5, "toolResult": 3}
    # the durable section: 6 messages survive the reopened store, the resume adds 2
    assert "resumed 6 messages" in out.getvalue()
    assert result.durable_messages == 8 and result.durable_entries >= 8
    assert "\x1b" not in out.getvalue()  # a StringIO is not a terminal


def printed(agent: Any, out: io.StringIO, text: str) -> trio.Event:
    """An event set once ``text`` has been printed (checked after each agent event)."""
    seen = trio.Event()

    def check(event: Any) -> None:
        if text in out.getvalue():
            seen.set()

    agent.subscribe(check)
    return seen


class Lines:
    """Typed lines for a chat; ``None`` is end of input. Waits when it runs dry."""

    def __init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[str | None](10)

    async def read(self) -> str | None:
        return await self.receive.receive()


async def test_chat_interrupt_aborts_a_run_then_exits_when_idle(autojump_clock: Any) -> None:
    agent = agent_factory("faux", token_delay=0.05)()
    out = io.StringIO()
    lines = Lines()
    chat = ChatSession(agent, out=out, read_line=lines.read, echo_input=True)
    async with trio.open_nursery() as nursery:
        done = trio.Event()
        codes: list[int] = []

        async def run() -> None:
            codes.append(await chat.run(handle_signals=False))
            done.set()

        nursery.start_soon(run)
        story_started = printed(agent, out, "Sentence 2")
        await lines.send.send("tell me a long story")
        await story_started.wait()
        assert chat.interrupt() is False  # first Ctrl-C: abort the run, keep chatting
        await agent.wait_for_idle()
        answered = printed(agent, out, "The calculate tool says: 4")
        await lines.send.send("what is 2+2?")
        await answered.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert not chat.running
        assert chat.interrupt() is True  # Ctrl-C at the prompt: leave
        await done.wait()
    assert codes == [130]
    text = out.getvalue()
    assert "[aborted: Request was aborted]" in text and "[Ctrl-C: bye]" in text
    assert_transcript_valid(agent.state.messages)
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]


async def test_chat_reset_and_quit(autojump_clock: Any) -> None:
    agent = agent_factory("faux", token_delay=0.0)()
    out = io.StringIO()
    script = iter(["hello", "", "/reset", "/quit", "never read"])

    async def read() -> str | None:
        await trio.lowlevel.checkpoint()
        return next(script)

    assert await ChatSession(agent, out=out, read_line=read).run(handle_signals=False) == 0
    assert agent.state.messages == []
    assert "You said: 'hello'" in out.getvalue() and "[conversation forgotten]" in out.getvalue()


async def test_chat_help_and_an_unknown_command_are_answered_not_sent(autojump_clock: Any) -> None:
    agent = agent_factory("faux", token_delay=0.0)()
    out = io.StringIO()
    script = iter(["/help", "/nope", "/quit", "never read"])

    async def read() -> str | None:
        await trio.lowlevel.checkpoint()
        return next(script)

    assert await ChatSession(agent, out=out, read_line=read).run(handle_signals=False) == 0
    assert agent.state.messages == []  # neither line went to the model
    text = out.getvalue()
    assert text.count(HELP) == 2  # at start and for /help
    assert "[unknown command /nope; /help lists them]" in text
    assert text.rstrip().endswith("[bye]")
