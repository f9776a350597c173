"""Hostile review of the text blocks' public attrs fields and the records without weak
references: plain cattrs, tracebacks, lent piece lists under load, and blocks streamed but never
read going through the wire format and a session store."""

from __future__ import annotations

import copy
import functools
import inspect
import pickle
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import cattrs
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import MessageBuilder, faux


def _main(block: Any) -> str:
    return block.text if isinstance(block, pt.TextContent) else block.thinking


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_the_fields_defaults_are_the_constructors(kind: type) -> None:
    # attrs.fields is what cattrs, evolve and schema tools read: an optional argument of
    # __init__ must not be a required field there
    parameters = inspect.signature(kind).parameters
    for field in attrs.fields(kind)[1:]:
        assert field.default == parameters[field.name].default, field.name


def test_a_plain_cattrs_converter_builds_a_block_from_its_string_alone() -> None:
    converter = cattrs.Converter()
    assert converter.structure({"text": "hi"}, pt.TextContent) == pt.TextContent("hi")
    assert converter.structure({"thinking": "hm"}, pt.ThinkingContent) == pt.ThinkingContent("hm")
    # and a union picks the block by its string's key
    user_block = converter.structure({"text": "x"}, pt.TextContent | pt.ImageContent)
    assert user_block == pt.TextContent("x")


def test_a_plain_cattrs_round_trip_of_a_message_streamed_into_keeps_every_piece() -> None:
    text, thinking = pt.TextContent("a"), pt.ThinkingContent("t", "sig")
    add = text.appender()  # still streaming: its piece list is lent
    add("b")
    thinking.append("u")
    message = pt.AssistantMessage(
        [thinking, text, pt.ToolCall("c1", "f", {"n": 1})], "faux", "faux", "faux-1"
    )
    converter = cattrs.Converter()
    data = converter.unstructure(message)
    assert data["content"][:2] == [
        {"thinking": "tu", "thinking_signature": "sig", "redacted": False},
        {"text": "ab", "text_signature": None},
    ]
    # the union of blocks is told apart by the required string (text vs thinking)
    assert converter.structure(data, pt.AssistantMessage) == message
    add("c")
    assert text.text == "abc"  # the appender survived the unstructure's read


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_a_traceback_through_the_property_names_it(kind: type) -> None:
    block = kind("a")
    block.appender()(3)  # not a string (append() refuses it; an appender cannot check)
    with pytest.raises(TypeError) as caught:
        _main(block)
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert frames[-1].name == attrs.fields(kind)[0].name


def _holders(add: Callable[[str], None]) -> list[Callable[[str], None]]:
    """The appender kept in ways a user might keep it."""
    box = [add]
    table = {"a": add}
    partial = functools.partial(add)
    return [add, lambda s: box[0](s), lambda s: table["a"](s), partial]


def test_a_lent_piece_list_is_never_dropped_by_a_warmed_up_read() -> None:
    # thousands of reads and assignments, so the interpreter specialises the code that counts
    # the list's references; an appender held any way must keep streaming into the block
    for round_ in range(800):
        for kind in (pt.TextContent, pt.ThinkingContent):
            block = kind("x")
            add = _holders(block.appender())[round_ % 4]
            expected = "x"
            for piece in ("1", "2", "3"):
                add(piece)
                expected += piece
                assert _main(block) == expected
                clone = copy.copy(block)
                setattr(block, attrs.fields(kind)[0].name, expected + "!")
                expected += "!"
                assert _main(clone) == expected[:-1]
            add("END")
            assert _main(block) == expected + "END"


def _unread_stream(pieces: list[str]) -> Callable[..., AsyncIterator[Any]]:
    """A stream function whose text and thinking blocks get only deltas: no end event, so
    nothing reads them before the loop, the wire format or the store does."""

    async def events(model: Any) -> AsyncIterator[Any]:
        builder = MessageBuilder(model)
        yield builder.start()
        thinking = builder.thinking_start().content_index
        text = builder.text_start().content_index
        for piece in pieces:
            yield builder.thinking_delta(thinking, piece.upper())
            yield builder.text_delta(text, piece)
        yield builder.done("stop")

    @asynccontextmanager
    async def stream(model: Any, context: Any, options: Any) -> AsyncIterator[Any]:
        yield events(model)

    return stream


async def test_blocks_streamed_and_never_read_are_stored_and_loaded_whole(
    tmp_path: Path,
) -> None:
    pieces = ["one ", "two ", "three"]
    model = pt.get_model("faux", "faux-1")
    path = tmp_path / "review7.db"
    state = pt.AgentState(model=model)
    with trio.fail_after(10):
        async with (
            pt.open_session_store(path) as store,
            store.open_agent("s", initial_state=state, stream_fn=_unread_stream(pieces)) as agent,
        ):
            await agent.prompt("go")
            reply = agent.state.messages[-1]
            assert isinstance(reply, pt.AssistantMessage)
            wire = pt.to_json(reply)
            pickled = pickle.dumps(reply)
        async with (
            pt.open_session_store(path) as store,
            store.open_agent("s", initial_state=pt.AgentState()) as agent,
        ):
            loaded = agent.state.messages[-1]
    assert isinstance(loaded, pt.AssistantMessage)
    assert [_main(block) for block in loaded.content] == ["ONE TWO THREE", "one two three"]
    assert [block["type"] for block in wire["content"]] == ["thinking", "text"]
    assert wire["content"][1]["text"] == "one two three"
    assert pt.from_json(wire, pt.AssistantMessage) == loaded
    assert pickle.loads(pickled) == loaded


async def test_a_listener_copying_the_partial_on_every_delta_costs_no_text() -> None:
    # the scripted model's zero-delay path streams through an appender of its own frame and
    # its delayed path through the builder's: a listener's reads, copies and pickles mid-stream
    # must neither lose a piece nor stop the stream from reaching the block
    answer = faux.assistant_message(
        [faux.thinking("thinking it over slowly"), faux.text("a long answer, piece by piece")]
    )
    for delay in (0.0, 0.001):
        model = faux.FauxModel([answer], chunker=faux.by_size(2), token_delay=delay)
        agent = pt.Agent(pt.AgentState(model=model.model), stream_fn=model)
        seen: dict[int, str] = {}
        snapshots: list[tuple[str, ...]] = []

        def on_event(
            event: pt.AgentEvent,
            seen: dict[int, str] = seen,
            snapshots: list[tuple[str, ...]] = snapshots,
        ) -> None:
            if event.type != "message_update":
                return
            inner = event.assistant_message_event
            if inner.type in ("text_delta", "thinking_delta"):
                seen[inner.content_index] = seen.get(inner.content_index, "") + inner.delta
                partial = inner.partial
                # copies first: they must not go by the string slot, which still holds the
                # first piece alone while the block is streamed into
                clones = (
                    copy.deepcopy(partial),
                    pickle.loads(pickle.dumps(partial)),
                    attrs.evolve(partial, content=[attrs.evolve(b) for b in partial.content]),
                    attrs.evolve(partial, content=list(map(copy.copy, partial.content))),
                )
                for clone in clones:
                    assert _main(clone.content[inner.content_index]) == seen[inner.content_index]
                    assert clone == partial
                block = partial.content[inner.content_index]
                assert _main(block) == seen[inner.content_index]
                snapshots.append(tuple(map(_main, copy.copy(partial).content)))

        agent.subscribe(on_event)
        with trio.fail_after(5):
            await agent.prompt("Go.")
        reply = agent.state.messages[-1]
        assert isinstance(reply, pt.AssistantMessage)
        assert [_main(block) for block in reply.content] == [
            "thinking it over slowly",
            "a long answer, piece by piece",
        ]
        assert len(snapshots) > 20
        assert snapshots[-1] == ("thinking it over slowly", "a long answer, piece by piece")
