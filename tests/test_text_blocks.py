"""Text and thinking blocks: streamed pieces join on read, appenders stay valid, and a finished
block holds its string alone (no piece list), which is what thousands of transcripts keep."""

from __future__ import annotations

import copy
import functools
import gc
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

from .support import make_agent


def _holds_a_list(block: object) -> bool:
    return any(type(ref) is list for ref in gc.get_referents(block))


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_an_appender_outlives_reads_and_assignments(kind: type) -> None:
    block = kind("a")
    add = block.appender()
    add("b")
    read = block.text if kind is pt.TextContent else block.thinking
    assert read == "ab"
    add("c")  # after a read
    if kind is pt.TextContent:
        block.text = "x"
    else:
        block.thinking = "x"
    add("y")  # after an assignment
    block.append("z")
    assert (block.text if kind is pt.TextContent else block.thinking) == "xyz"
    assert _holds_a_list(block)  # the appender's list is still the block's


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_a_block_nobody_streams_into_holds_its_string_alone(kind: type) -> None:
    block = kind("made whole")
    assert not _holds_a_list(block)
    block.append(", then added to")
    assert _holds_a_list(block)
    text = block.text if kind is pt.TextContent else block.thinking
    assert text == "made whole, then added to"
    assert not _holds_a_list(block)  # no appender refers to the list: the read freed it
    add = block.appender()
    add("!")
    del add
    assert (block.text if kind is pt.TextContent else block.thinking).endswith("to!")
    assert not _holds_a_list(block)


def test_a_dropped_appender_lets_the_next_read_free_the_list() -> None:
    block = pt.TextContent()
    add = block.appender()
    for piece in ("one ", "two"):
        add(piece)
    assert block.text == "one two"
    assert _holds_a_list(block)  # still lent
    del add
    assert block.text == "one two"
    assert not _holds_a_list(block)


def test_the_builder_lets_go_of_its_appenders_at_the_block_end() -> None:
    builder = MessageBuilder(pt.faux.FauxModel([]).model)
    text = builder.text_start().content_index
    thinking = builder.thinking_start().content_index
    for piece in ("a", "b", "c"):
        builder.text_delta(text, piece)
        builder.thinking_delta(thinking, piece * 2)
        # a listener reading the partial mid-stream must not cost the builder its appender
        assert builder.message.content[text].text.endswith(piece)  # type: ignore[union-attr]
    assert builder.text_end(text).content == "abc"
    assert builder.thinking_end(thinking).content == "aabbcc"
    blocks = builder.message.content
    assert [_holds_a_list(block) for block in blocks] == [False, False]


async def test_a_streamed_transcript_holds_no_piece_lists() -> None:
    answers = [
        pt.faux.assistant_message(
            [pt.faux.thinking("let me see"), pt.faux.text("a streamed answer in pieces")]
        )
    ]
    for delay in (0.0, 0.001):
        agent = make_agent(answers, (), chunker=pt.faux.by_size(3), token_delay=delay)
        deltas: list[str] = []

        def on_event(event: pt.AgentEvent, deltas: list[str] = deltas) -> None:
            if (
                event.type == "message_update"
                and event.assistant_message_event.type == "text_delta"
            ):
                deltas.append(event.assistant_message_event.delta)

        agent.subscribe(on_event)
        with trio.fail_after(5):
            await agent.prompt("Go.")
        reply = agent.state.messages[-1]
        assert isinstance(reply, pt.AssistantMessage)
        assert len(deltas) > 3  # streamed in pieces, not as one
        # freed at the block's end, by text_end's own read (nothing reads it later here)
        assert [_holds_a_list(block) for block in reply.content] == [False, False]
        assert [
            getattr(b, "text", None) or getattr(b, "thinking", None) for b in reply.content
        ] == [
            "let me see",
            "a streamed answer in pieces",
        ]


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_attrs_tools_see_the_public_fields_and_the_whole_text(kind: type) -> None:
    # a block mid-stream: its string slot still holds the first piece alone
    main = "text" if kind is pt.TextContent else "thinking"
    block = kind("a")
    add = block.appender()
    add("b")
    block.append("c")
    names = [field.name for field in attrs.fields(kind)]
    assert names[0] == main and all(not name.startswith("_") for name in names)
    assert kind.__match_args__[0] == main
    assert attrs.asdict(block)[main] == "abc"
    changed = attrs.evolve(block, **{main: "new"})
    assert type(changed) is kind and getattr(changed, main) == "new"
    assert getattr(attrs.evolve(block), main) == "abc"
    match block:
        case pt.TextContent(text) | pt.ThinkingContent(text):
            assert text == "abc"
    for clone in (copy.copy(block), copy.deepcopy(block), pickle.loads(pickle.dumps(block))):
        assert clone == block and not _holds_a_list(clone)
    add("d")  # the block streams on; its copies do not
    assert getattr(block, main) == "abcd" and getattr(clone, main) == "abc"
    message = pt.AssistantMessage([block], "faux", "faux", "faux-1", pt.Usage(), "stop")
    assert attrs.asdict(message)["content"][0][main] == "abcd"


def test_a_plain_cattrs_converter_round_trips_a_block() -> None:
    # the fields' defaults are __init__'s: a converter of the user's own needs only the text
    import cattrs

    converter = cattrs.Converter()
    block = converter.structure({"text": "hi"}, pt.TextContent)
    block.append(" there")
    assert converter.unstructure(block) == {
        "text": "hi there",
        "text_signature": None,
        "extra": None,
    }
    thinking = converter.structure({"thinking": "hm", "redacted": True}, pt.ThinkingContent)
    assert (thinking.thinking, thinking.redacted, thinking.thinking_signature) == ("hm", True, None)


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_a_piece_that_is_not_a_str_is_refused_where_it_is_added(kind: type) -> None:
    block = kind("ab")
    with pytest.raises(TypeError, match=r"append\(\) takes a str, not int: 3"):
        block.append(3)
    assert (block.text if kind is pt.TextContent else block.thinking) == "ab"  # unchanged
    add = block.appender()  # a bound list.append: it cannot check, so the read names it
    add(b"x")
    with pytest.raises(TypeError, match=r"streamed into this \w+Content is a bytes, not a str"):
        _ = block.text if kind is pt.TextContent else block.thinking


# --- copy.copy of a block: a snapshot, never a second view of the same pieces ------------------


def _read(block: pt.TextContent | pt.ThinkingContent) -> str:
    return block.text if isinstance(block, pt.TextContent) else block.thinking


def _assign(block: pt.TextContent | pt.ThinkingContent, value: str) -> None:
    if isinstance(block, pt.TextContent):
        block.text = value
    else:
        block.thinking = value


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_a_shallow_copy_of_a_block_being_streamed_is_a_snapshot(kind: type) -> None:
    """``copy.copy(block)`` of a partial mid-stream (a UI's snapshot) shares no piece list with
    the live block: it does not grow with the stream, and editing it leaves the transcript's
    block alone."""
    block = kind("a")
    add = block.appender()  # what the builder holds while it streams
    add("b")
    snapshot = copy.copy(block)
    assert snapshot == block
    add("c")
    assert _read(snapshot) == "ab"  # not the stream's later pieces
    _assign(snapshot, "edited")
    assert _read(block) == "abc"  # the live block is untouched
    add("d")
    assert (_read(block), _read(snapshot)) == ("abcd", "edited")


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_a_shallow_copy_is_independent_whether_or_not_the_block_was_read(kind: type) -> None:
    """A copy is independent of its original whether or not pieces were appended since the
    last read (no hidden state decides it)."""
    results = []
    for read_first in (False, True):
        block = kind("x")
        block.append("y")
        if read_first:
            _read(block)
        clone = copy.copy(block)
        block.append("z")
        results.append(_read(clone))
    assert results == ["xy", "xy"]


def test_a_shallow_copy_keeps_the_other_fields() -> None:
    text = copy.copy(pt.TextContent("t", text_signature="sig"))
    assert (text.text, text.text_signature) == ("t", "sig")
    thinking = copy.copy(pt.ThinkingContent("r", thinking_signature="s", redacted=True))
    assert (thinking.thinking, thinking.thinking_signature, thinking.redacted) == ("r", "s", True)
    assert type(text) is pt.TextContent and type(thinking) is pt.ThinkingContent


# --- the blocks with plain cattrs, tracebacks, appenders held any way, streams never read -----


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
        {"thinking": "tu", "thinking_signature": "sig", "redacted": False, "extra": None},
        {"text": "ab", "text_signature": None, "extra": None},
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
        _read(block)
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
                assert _read(block) == expected
                clone = copy.copy(block)
                setattr(block, attrs.fields(kind)[0].name, expected + "!")
                expected += "!"
                assert _read(clone) == expected[:-1]
            add("END")
            assert _read(block) == expected + "END"


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
    path = tmp_path / "agents.db"
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
    assert [_read(block) for block in loaded.content] == ["ONE TWO THREE", "one two three"]
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
        agent = make_agent([answer], (), chunker=faux.by_size(2), token_delay=delay)
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
                    assert _read(clone.content[inner.content_index]) == seen[inner.content_index]
                    assert clone == partial
                block = partial.content[inner.content_index]
                assert _read(block) == seen[inner.content_index]
                snapshots.append(tuple(map(_read, copy.copy(partial).content)))

        agent.subscribe(on_event)
        with trio.fail_after(5):
            await agent.prompt("Go.")
        reply = agent.state.messages[-1]
        assert isinstance(reply, pt.AssistantMessage)
        assert [_read(block) for block in reply.content] == [
            "thinking it over slowly",
            "a long answer, piece by piece",
        ]
        assert len(snapshots) > 20
        assert snapshots[-1] == ("thinking it over slowly", "a long answer, piece by piece")
