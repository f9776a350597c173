"""The builder's per-delta path and the content blocks' public appender."""

from __future__ import annotations

import pytest

import pi_trio as pt
from pi_trio.providers import MessageBuilder

MODEL = pt.get_model("faux", "faux-1")


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_appender_stays_valid_across_reads_and_assignments(kind: type) -> None:
    block = kind("a")
    append = block.appender()
    append("b")
    read = (lambda: block.text) if kind is pt.TextContent else (lambda: block.thinking)
    assert read() == "ab"
    append("c")  # after a read (which joins the pieces)
    assert read() == "abc"
    if kind is pt.TextContent:
        block.text = "new"
    else:
        block.thinking = "new"
    append("!")  # after an assignment (a decoder replacing the text mid-stream)
    assert read() == "new!"


def test_builder_deltas_reach_the_block_and_its_events() -> None:
    builder = MessageBuilder(MODEL)
    text = builder.text_start().content_index
    thinking = builder.thinking_start().content_index
    events = [builder.text_delta(text, "he"), builder.thinking_delta(thinking, "hm")]
    events.append(builder.text_delta(text, "llo"))
    assert [e.delta for e in events] == ["he", "hm", "llo"]
    assert builder.text_end(text).content == "hello"
    assert builder.thinking_end(thinking).content == "hm"


def test_builder_delta_into_a_block_it_did_not_start() -> None:
    builder = MessageBuilder(MODEL)
    builder.message.content.append(pt.TextContent("pre"))
    builder.text_delta(0, "fix")
    assert builder.message.content[0] == pt.TextContent("prefix")
    builder.tool_call_start("c1", "noop")
    with pytest.raises(TypeError, match="content block 1 is a ToolCall, not a TextContent"):
        builder.text_delta(1, "x")
