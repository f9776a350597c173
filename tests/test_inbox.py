"""Steering and follow-up queues through ``pt.Agent`` (DESIGN.md sections 2-4).

Steering is polled after each turn and injected before the next model call; follow-ups only
when the agent would stop. "one-at-a-time" takes one message per poll, "all" every queued
one. Clearing drops queued messages. An abort loses nothing: every queued message is either
still queued or already in the transcript, exactly once.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

import pi_trio as pt

from .support import faux, make_scripted_agent, sleeps, user_texts
from .transcript import assert_transcript_valid


def _request_users(scripted: pt.faux.FauxModel) -> list[list[str]]:
    """The user texts each model request carried."""
    return [user_texts(call.context.messages) for call in scripted.calls]


async def _prompt_and_queue(agent: pt.Agent, queue: list[tuple[str, str]], at: float) -> None:
    """prompt("go") in a task; at virtual time ``at`` queue (kind, text) pairs."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(at)
        for kind, text in queue:
            agent.steer(text) if kind == "steer" else agent.follow_up(text)


ANSWERS = [faux.assistant_message(t) for t in ("a", "b", "c", "d")]


@pytest.mark.parametrize("mode", ["one-at-a-time", "all"])
async def test_steering_is_injected_after_the_turn_one_or_all(
    autojump_clock: trio.testing.MockClock, mode: str
) -> None:
    agent, scripted = make_scripted_agent([sleeps(1), *ANSWERS], steering_mode=mode)
    await _prompt_and_queue(agent, [("steer", "s1"), ("steer", "s2")], at=0.5)
    roles = [m.role for m in agent.state.messages]
    if mode == "one-at-a-time":
        assert _request_users(scripted) == [["go"], ["go", "s1"], ["go", "s1", "s2"]]
        assert roles == ["user", "assistant", "toolResult", "user", "assistant", "user",
                         "assistant"]  # fmt: skip
    else:
        assert _request_users(scripted) == [["go"], ["go", "s1", "s2"]]
        assert roles == ["user", "assistant", "toolResult", "user", "user", "assistant"]
    assert not agent.has_queued_messages()
    assert_transcript_valid(agent.state.messages)


@pytest.mark.parametrize("mode", ["one-at-a-time", "all"])
async def test_follow_ups_wait_until_the_agent_would_stop(
    autojump_clock: trio.testing.MockClock, mode: str
) -> None:
    agent, scripted = make_scripted_agent([sleeps(1), *ANSWERS], follow_up_mode=mode)
    await _prompt_and_queue(agent, [("follow", "f1"), ("follow", "f2")], at=0.5)
    # the turn after the tool batch is not the end: the follow-ups wait for the answer "a"
    if mode == "one-at-a-time":
        assert _request_users(scripted) == [["go"], ["go"], ["go", "f1"], ["go", "f1", "f2"]]
    else:
        assert _request_users(scripted) == [["go"], ["go"], ["go", "f1", "f2"]]
    assert not agent.has_queued_messages()
    assert_transcript_valid(agent.state.messages)


async def test_steering_goes_before_follow_ups(autojump_clock: trio.testing.MockClock) -> None:
    agent, scripted = make_scripted_agent([sleeps(1), *ANSWERS])
    await _prompt_and_queue(agent, [("follow", "f1"), ("steer", "s1")], at=0.5)
    assert _request_users(scripted) == [["go"], ["go", "s1"], ["go", "s1", "f1"]]


@pytest.mark.parametrize("clear", ["steering", "follow_up", "all"])
async def test_cleared_queues_inject_nothing(
    autojump_clock: trio.testing.MockClock, clear: str
) -> None:
    agent, scripted = make_scripted_agent([sleeps(1), *ANSWERS])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(0.5)
        agent.steer("s1")
        agent.follow_up("f1")
        assert agent.has_queued_messages()
        if clear == "steering":
            agent.clear_steering_queue()
        elif clear == "follow_up":
            agent.clear_follow_up_queue()
        else:
            agent.clear_all_queues()
    expected = {
        "steering": [["go"], ["go"], ["go", "f1"]],
        "follow_up": [["go"], ["go", "s1"]],
        "all": [["go"], ["go"]],
    }[clear]
    assert _request_users(scripted) == expected
    assert not agent.has_queued_messages()


@pytest.mark.parametrize("abort_at", [0.75, 1.5, 2.5, 3.5, 5.0, 6.5, 8.0, 10.0, 14.0])
async def test_abort_keeps_every_queued_message_queued_or_in_the_transcript(
    autojump_clock: trio.testing.MockClock, abort_at: float
) -> None:
    """Wherever the abort lands (mid-tool, mid-stream, between turns), each queued message
    ends up exactly once in the transcript once the queues are worked off."""
    script = [sleeps(2), faux.assistant_message("a b c"), sleeps(2),
              *[faux.assistant_message("ok ok") for _ in range(6)]]  # fmt: skip
    agent, _ = make_scripted_agent(script, token_delay=1.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(0.25)
        agent.steer("s1")
        agent.steer("s2")
        agent.follow_up("f1")
        await trio.sleep(abort_at - 0.25)
        agent.abort()
    taken = user_texts(agent.state.messages)[1:]
    assert taken == ["s1", "s2", "f1"][: len(taken)]  # taken in order, none twice
    assert agent.has_queued_messages() == (len(taken) < 3)  # the rest is still queued
    assert_transcript_valid(agent.state.messages)
    while agent.has_queued_messages():
        await agent.continue_()  # from the aborted tail: the next queued message is the prompt
    assert user_texts(agent.state.messages) == ["go", "s1", "s2", "f1"]
    assert_transcript_valid(agent.state.messages)
