"""A response's stream becomes the run's events the same way whichever relay carries it: the
written-out one the loop uses (``Emitter.relay``) and its plain form (``relay_plainly``, one
``emit`` per event) give the same events, transcript and state, through failures and aborts."""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.loop._emit import Emitter

from .support import ECHO, make_agent, strip_timestamps


def _assistant(text: str) -> pt.AssistantMessage:
    return pt.faux.assistant_message(text)


def _swapping_stream(model: pt.Model, context: pt.Context, options: pt.StreamOptions) -> Any:
    """A provider that hands out a new partial object with every event (as some do), sends
    updates before its start (pi ignores those), and starts twice."""

    @asynccontextmanager
    async def stream() -> AsyncIterator[AsyncIterator[pt.StreamEvent]]:
        async def events() -> AsyncIterator[pt.StreamEvent]:
            partial = _assistant("")
            partial.content = []
            yield pt.TextStart(0, partial)  # before the start: ignored
            yield pt.StreamStart(partial)
            partial = copy.deepcopy(partial)
            yield pt.StreamStart(partial)  # a second start replaces the first partial
            text = ""
            for piece in ("swap ", "every ", "time"):
                partial = copy.deepcopy(partial)
                text += piece
                partial.content = [pt.TextContent(text)]
                yield pt.TextDelta(0, piece, partial)
                await trio.sleep(0.01)
            final = copy.deepcopy(partial)
            yield pt.StreamDone("stop", final)

        yield events()

    return stream()


def _scripted_agent(scenario: str) -> pt.Agent:
    if scenario == "swapping partials":
        agent = make_agent([], [ECHO])
        agent.stream_fn = _swapping_stream
        return agent
    script = [
        pt.faux.assistant_message(
            [
                pt.faux.thinking("first I think about it"),
                pt.faux.text("then I say a few words"),
                pt.faux.tool_call("echo", {"text": "hi"}, id="c1"),
            ]
        ),
        pt.faux.assistant_message("and the end of it"),
    ]
    return make_agent(script, [ECHO], token_delay=0.01)


def _listener(scenario: str, agent: pt.Agent, seen: list[Any]) -> Callable[..., Any]:
    """Notes each event with the streaming message the agent's state shows for it (pi's
    barrier: a listener sees the state updated), and misbehaves as ``scenario`` says."""
    updates = 0

    def note(event: pt.AgentEvent) -> None:
        nonlocal updates
        streaming = agent.state.streaming_message
        seen.append(strip_timestamps([pt.to_json(event), streaming and pt.to_json(streaming)]))
        if event.type == "message_update":
            updates += 1
            if scenario == "listener raises" and updates == 4:
                raise ValueError("listener broke")
            if scenario == "abort mid-stream" and updates == 3:
                agent.abort()
            if scenario == "ctrl-c mid-stream" and updates == 3:
                raise KeyboardInterrupt

    async def waits(event: pt.AgentEvent) -> None:
        note(event)
        await trio.sleep(0.001)

    return waits if scenario == "listener awaits" else note


SCENARIOS = [
    "plain",
    "listener raises",
    "abort mid-stream",
    "ctrl-c mid-stream",
    "listener awaits",
    "swapping partials",
]


async def _run(scenario: str) -> tuple[Any, ...]:
    agent = _scripted_agent(scenario)
    seen: list[Any] = []
    after: list[Any] = []  # a second listener: what the first one's failures leave it
    agent.subscribe(_listener(scenario, agent, seen))
    agent.subscribe(lambda event: after.append(strip_timestamps(pt.to_json(event))))
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("pi_trio").addHandler(handler)
    escaped = None
    try:
        await agent.prompt("go")
    except KeyboardInterrupt as exc:
        escaped = type(exc)
    finally:
        logging.getLogger("pi_trio").removeHandler(handler)
    transcript = [strip_timestamps(pt.to_json(m)) for m in agent.state.messages]
    return seen, after, transcript, escaped, agent.state.error_message, records


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_the_written_out_relay_gives_what_the_plain_one_gives(
    scenario: str, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = await _run(scenario)
    monkeypatch.setattr(Emitter, "relay", Emitter.relay_plainly)
    plain = await _run(scenario)
    assert fast == plain
    after = fast[1]
    assert sum(e["type"] == "message_update" for e in after) >= 3
    assert after[-1]["type"] == "agent_end"
