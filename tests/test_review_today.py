"""A hostile review of the per-agent memory work (issue #19): text blocks without a piece list
once finished, the ``run_loop`` seam, the inlined ``prompt()`` run. Each test names the defect
it pins."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

import pi_trio as pt
import pi_trio.otel
from pi_trio.loop import run_loop
from tests.support import PROMPT, faux, loop_setup, make_agent


def _read(block: pt.TextContent | pt.ThinkingContent) -> str:
    return block.text if isinstance(block, pt.TextContent) else block.thinking


def _assign(block: pt.TextContent | pt.ThinkingContent, value: str) -> None:
    if isinstance(block, pt.TextContent):
        block.text = value
    else:
        block.thinking = value


# --- copy.copy of a block: a snapshot, never a second view of the same pieces ------------------


@pytest.mark.parametrize("kind", [pt.TextContent, pt.ThinkingContent])
def test_a_shallow_copy_of_a_block_being_streamed_is_a_snapshot(kind: type) -> None:
    """A listener that keeps ``copy.copy(block)`` of the partial mid-stream (a UI's snapshot)
    got a block sharing the piece list: it kept growing with the stream, and editing it
    rewrote the live transcript's block under the provider."""
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
    """Whether a copy shared its original's pieces depended on a hidden state (were pieces
    appended since the last read?): same calls, different results."""
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


# --- run_loop(): the coroutine made at the call --------------------------------------------------


class _Counting:
    """The names of the spans started and ended (fed by a span processor)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.ended: list[str] = []


@pytest.fixture
def spans() -> Iterator[_Counting]:
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    counting = _Counting()

    class Processor(sdk_trace.SpanProcessor):  # type: ignore[misc, name-defined]
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            counting.started.append(span.name)

        def on_end(self, span: Any) -> None:
            counting.ended.append(span.name)

    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(Processor())
    pi_trio.otel.configure(tracer_provider=provider)
    yield counting
    pi_trio.otel.configure()


async def test_a_run_loop_coroutine_never_awaited_leaves_no_open_span(spans: _Counting) -> None:
    """``run_loop()`` started the run's ``invoke_agent`` span at the call: a coroutine closed
    (or dropped) before its first step left a span that never ends."""
    context, config, sink, _ = loop_setup([faux.assistant_message("hi")])
    run_loop(PROMPT, context, config, sink).close()
    assert spans.started == spans.ended == []
    assert (context.messages, sink.events) == ([], [])  # and nothing ran
    await run_loop(PROMPT, context, config, sink)
    assert sorted(spans.started) == sorted(spans.ended) == ["chat faux-1", "invoke_agent"]


# --- continue_() with a bad setting ------------------------------------------------------------


async def test_a_bad_setting_makes_continue_raise_without_losing_the_steered_message() -> None:
    """A bad setting is refused where it is set, so ``continue_()`` never takes the steering
    queue's message for a run that cannot start (it used to, and lost it)."""
    agent = make_agent([faux.assistant_message("first"), faux.assistant_message("second")])
    await agent.prompt("go")
    agent.steer(pt.UserMessage("steered"))
    with pytest.raises(ValueError, match="max_parallel_tools"):
        agent.max_parallel_tools = 0
    assert agent.has_queued_messages() and agent.max_parallel_tools is None
    await agent.continue_()
    assert [getattr(m, "content", None) for m in agent.state.messages[-2:]] == [
        "steered",
        faux.assistant_message("second").content,
    ]
