"""Text and thinking blocks: streamed pieces join on read, appenders stay valid, and a finished
block holds its string alone (no piece list), which is what thousands of transcripts keep."""

from __future__ import annotations

import copy
import gc
import pickle

import attrs
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import MessageBuilder

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
    assert converter.unstructure(block) == {"text": "hi there", "text_signature": None}
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
