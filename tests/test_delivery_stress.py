"""A seeded stress test of event delivery: 1,000 runs, each with parallel tools, steering, a
slow listener, a raising listener and an ``events()`` reader, aborted (``abort()``) or cut by a
deadline at a random moment, or left to finish. Every subscriber's events must form a
well-formed run and the transcript must be valid, every time.

Deterministic: MockClock with autojump, one ``random.Random(seed)`` per run; a failure names
the seed that reproduces it (``STRESS_SEED=N pytest -k stress`` reruns just that one).
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .grammar import assert_event_grammar
from .support import make_agent
from .transcript import assert_transcript_valid

pytestmark = pytest.mark.slow  # hundreds of randomly aborted runs per seed

RUNS = 1000
CHUNKS = 4
SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}


async def _sleep(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await on_update(pt.ToolResult([pt.TextContent("halfway")]))
    await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent("woke")])


SLEEP = pt.AgentTool("sleep", "Sleep", "sleeps", SCHEMA, _sleep)


def _script(rng: random.Random) -> list[Any]:
    turns = []
    for turn in range(rng.randint(0, 3)):
        calls = [
            faux.tool_call("sleep", {"s": round(rng.uniform(0, 0.3), 3)}, id=f"t{turn}c{c}")
            for c in range(rng.randint(1, 3))
        ]
        turns.append(faux.assistant_message([faux.text("let me check"), *calls]))
    # enough final answers for the steering and follow-up turns too
    return [*turns, *(faux.assistant_message("all done, thanks") for _ in range(3))]


class _Subscriber:
    def __init__(self, rng: random.Random, *, slow: bool, raise_at: int | None) -> None:
        self.events: list[pt.AgentEvent] = []
        self.rng = rng
        self.slow = slow
        self.raise_at = raise_at

    async def __call__(self, event: pt.AgentEvent) -> None:
        self.events.append(event)
        if self.slow and self.rng.random() < 0.3:
            await trio.sleep(self.rng.uniform(0, 0.05))
        if self.raise_at is not None and len(self.events) >= self.raise_at:
            raise RuntimeError("subscriber went away")


def _check(name: str, events: list[pt.AgentEvent], agent: pt.Agent) -> None:
    try:
        assert_event_grammar(events)
    except AssertionError as exc:
        raise AssertionError(f"{name}: {exc}") from None
    assert len(events) == len({id(e) for e in events}), f"{name}: an event came twice"
    end = events[-1]
    assert isinstance(end, pt.AgentEnd)
    messages = list(agent.state.messages)
    late = messages[-1]
    if late not in end.messages:
        # a listener failed on agent_end: recorded after it, as an error message (pi's way)
        assert isinstance(late, pt.AssistantMessage) and late.stop_reason == "error", name
        messages.pop()
    assert messages[-len(end.messages) :] == list(end.messages), name


async def _one_run(seed: int, stats: dict[str, int]) -> None:
    rng = random.Random(seed)
    agent = make_agent(_script(rng), [SLEEP], token_delay=0.01)
    plain = _Subscriber(rng, slow=False, raise_at=None)
    slow = _Subscriber(rng, slow=True, raise_at=None)
    raise_at = rng.randint(1, 40) if rng.random() < 0.3 else None
    raising = _Subscriber(rng, slow=False, raise_at=raise_at)
    for subscriber in rng.sample([plain, slow, raising], 3):
        agent.subscribe(subscriber)
    channel: list[pt.AgentEvent] = []
    mode = rng.choice(["abort", "deadline", "none"])
    moment = rng.uniform(0, 1.2)
    steer_at = rng.uniform(0, 1.0) if rng.random() < 0.5 else None

    async def read(rx: Any) -> None:
        async for event in rx:
            channel.append(event)
            if rng.random() < 0.2:
                await trio.sleep(0.001)
            if isinstance(event, pt.AgentEnd):
                return

    steering = trio.CancelScope()

    async def steer() -> None:
        assert steer_at is not None
        with steering:
            await trio.sleep(steer_at)
            agent.steer("also this")

    async def prompt() -> None:
        if mode == "deadline":
            with trio.move_on_after(moment) as deadline:
                await agent.prompt("go")
            stats["cut by a deadline"] += deadline.cancelled_caught
        else:
            await agent.prompt("go")

    subscription = agent.events(max_buffer_size=rng.choice([2, 16, 256]))
    async with subscription as rx, trio.open_nursery() as nursery:
        nursery.start_soon(read, rx)
        if steer_at is not None:
            nursery.start_soon(steer)
        await nursery.start(_started, prompt)
        if mode == "abort":
            await trio.sleep(moment)
            running = agent.is_running
            agent.abort()
            stats["aborted mid-run"] += running
        await agent.wait_for_idle()
        steering.cancel(reason="run over")  # the reader stops by itself at agent_end
    for name, subscriber in (("plain", plain), ("slow", slow), ("raising", raising)):
        _check(name, subscriber.events, agent)
    _check("events()", channel, agent)
    assert_transcript_valid(agent.state.messages)
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage)
    stats[f"ended {last.stop_reason}"] += 1
    stats["listener failures"] += raise_at is not None and len(raising.events) >= raise_at
    stats["runs"] += 1


async def _started(prompt: Any, *, task_status: Any) -> None:
    task_status.started()
    await prompt()


@pytest.mark.parametrize("chunk", range(CHUNKS))
async def test_every_subscriber_sees_a_well_formed_run_under_random_aborts(
    autojump_clock: trio.testing.MockClock, chunk: int
) -> None:
    only = os.environ.get("STRESS_SEED")
    seeds = [int(only)] if only else range(chunk, RUNS, CHUNKS)
    stats: dict[str, int] = {
        "runs": 0,
        "aborted mid-run": 0,
        "cut by a deadline": 0,
        "listener failures": 0,
        "ended stop": 0,
        "ended aborted": 0,
        "ended error": 0,
    }
    for seed in seeds:
        try:
            await _one_run(seed, stats)
        except BaseException as exc:
            raise AssertionError(f"seed {seed}: {exc!r}") from exc
        if only:
            break
    print(f"chunk {chunk}: {stats}")
    if not only:
        # the test exercises what it claims to: every kind of ending happened
        assert stats["aborted mid-run"] > 20 and stats["listener failures"] > 20, stats
        assert stats["ended stop"] and stats["ended aborted"] and stats["ended error"], stats
