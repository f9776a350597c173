"""Events that the hot paths build without calling ``__init__`` (the loop's message_update,
the scripted stream's deltas and the builder's events) are whole: every field is set, and each
equals the event its class's constructor makes from the same values."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import pi_trio as pt

from .support import PROMPT, loop_setup

faux = pt.faux


def _fields_of(event: Any) -> dict[str, Any]:
    # getattr raises AttributeError for a slot that the fast path left unset
    return {field.name: getattr(event, field.name) for field in attrs.fields(type(event))}


def _assert_whole(event: Any) -> None:
    cls = type(event)
    values = _fields_of(event)
    init = {f.alias: values[f.name] for f in attrs.fields(cls) if f.init}
    rebuilt = cls(**init)
    assert event == rebuilt, event
    # the fields left out of equality (seq, error...) hold what the constructor would give
    rebuilt_values = _fields_of(rebuilt)
    assert {k: rebuilt_values[k] for k in init} == {k: values[k] for k in init}, cls.__name__
    if all(f.init for f in attrs.fields(cls)):
        assert repr(event) == repr(rebuilt)


SCRIPT = [
    faux.assistant_message(
        [
            faux.thinking("let me see", signature="sig"),
            faux.text("one two three"),
            faux.tool_call("echo", {"text": "hi"}, id="call_1"),
        ]
    ),
    faux.assistant_message("all done now"),
]


@pytest.mark.parametrize("token_delay", [0.0, 0.5])
async def test_every_event_of_a_run_is_whole(autojump_clock: Any, token_delay: float) -> None:
    ctx, cfg, sink, _ = loop_setup(SCRIPT, token_delay=token_delay)
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)  # a sink that sets no seq
    updates = [e for e in sink.events if isinstance(e, pt.MessageUpdate)]
    kinds = {type(u.assistant_message_event).__name__ for u in updates}
    assert {"TextDelta", "ThinkingDelta", "ToolCallStart", "ToolCallEnd"} <= kinds
    for event in sink.events:
        _assert_whole(event)
        if isinstance(event, pt.MessageUpdate):
            _assert_whole(event.assistant_message_event)
            assert event.seq is None


async def test_the_stream_events_are_whole(autojump_clock: Any) -> None:
    scripted = faux.FauxModel(SCRIPT[:1], chunker=faux.by_size(2))
    async with scripted(scripted.model, pt.Context("sys", []), pt.StreamOptions()) as events:
        seen = [event async for event in events]
    assert len(seen) > 10
    for event in seen:
        _assert_whole(event)
