"""The scripted model streams like a provider, paced by trio's clock, and stops on cancel."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

MODEL = pt.get_model("faux", "faux-1")


async def _collect(scripted: faux.FauxModel, context: pt.Context | None = None) -> list[Any]:
    events = []
    async with scripted(MODEL, context or pt.Context(), pt.StreamOptions()) as stream:
        async for event in stream:
            events.append(event)
    return events


async def test_text_streams_by_words_then_done() -> None:
    scripted = faux.FauxModel([faux.assistant_message("Hello there world")])
    events = await _collect(scripted)
    assert [e.type for e in events] == [
        "start", "text_start", "text_delta", "text_delta", "text_delta", "text_end", "done",
    ]  # fmt: skip
    assert "".join(e.delta for e in events if e.type == "text_delta") == "Hello there world"
    done = events[-1]
    assert done.reason == "stop"
    assert done.message.content == [pt.TextContent("Hello there world")]
    assert (done.message.api, done.message.provider, done.message.model) == (
        "faux",
        "faux",
        "faux-1",
    )


async def test_thinking_and_tool_calls() -> None:
    script = faux.assistant_message(
        [faux.thinking("hmm ok"), faux.tool_call("echo", {"text": "x"}, id="c1")]
    )
    events = await _collect(faux.FauxModel([script]))
    types = [e.type for e in events]
    assert types == [
        "start", "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
        "toolcall_start", "toolcall_delta", "toolcall_end", "done",
    ]  # fmt: skip
    assert events[6].delta == '{"text":"x"}'
    assert events[7].tool_call == pt.ToolCall("c1", "echo", {"text": "x"})
    assert events[-1].reason == "toolUse"
    # the scripted message is not consumed or mutated: it can be streamed again
    assert script.content[1].arguments == {"text": "x"}


async def test_partial_grows_in_place() -> None:
    events = await _collect(faux.FauxModel([faux.assistant_message("a b c")]))
    partial = events[0].partial
    assert all(getattr(e, "partial", partial) is partial for e in events)
    assert partial.content[0].text == "a b c"


async def test_error_step_streams_content_then_error() -> None:
    script = faux.assistant_message("Let me", stop_reason="error", error_message="rate limited")
    events = await _collect(faux.FauxModel([script]))
    assert events[-1].type == "error"
    assert events[-1].error.error_message == "rate limited"
    assert events[-1].error.content == [pt.TextContent("Let me")]


async def test_exception_step_fails_without_start() -> None:
    events = await _collect(faux.FauxModel([ConnectionError("refused")]))
    assert [e.type for e in events] == ["error"]
    assert events[0].error.error_message == "refused"
    assert events[0].error.content == []


async def test_no_more_responses_is_an_error_message() -> None:
    scripted = faux.FauxModel([])
    events = await _collect(scripted)
    assert events[0].error.error_message == faux.NO_MORE_RESPONSES
    assert scripted.call_count == 1


async def test_factory_sees_context_and_call_index() -> None:
    seen: list[tuple[int, int]] = []

    async def answer(
        context: pt.Context, options: pt.StreamOptions, index: int
    ) -> pt.AssistantMessage:
        seen.append((index, len(context.messages)))
        return faux.assistant_message(f"call {index}")

    scripted = faux.FauxModel([answer, answer])
    ctx = pt.Context(messages=[pt.UserMessage("hi")])
    await _collect(scripted, ctx)
    events = await _collect(scripted, ctx)
    assert seen == [(0, 1), (1, 1)]
    assert events[-1].message.content[0].text == "call 1"
    assert scripted.calls[1].context is ctx


async def test_without_a_record_the_calls_are_counted_and_indexed_all_the_same() -> None:
    seen: list[int] = []

    def answer(context: pt.Context, options: pt.StreamOptions, index: int) -> pt.AssistantMessage:
        seen.append(index)
        return faux.assistant_message(f"call {index}")

    scripted = faux.FauxModel([answer, answer, answer], record_calls=False)
    for _ in range(3):
        events = await _collect(scripted)
    assert (seen, scripted.call_count, scripted.calls) == ([0, 1, 2], 3, [])
    assert events[-1].message.content[0].text == "call 2"


async def test_the_script_is_taken_in_order_and_let_go_of_once_taken() -> None:
    import gc

    first, second, third = (faux.assistant_message(text) for text in ("one", "two", "three"))
    scripted = faux.FauxModel([first, second])
    scripted.append_responses([third])
    assert scripted.pending_count == 3
    # messages take no weak references: watch the first step's content list instead, which
    # only that message refers to (a streamed answer is built in a list of its own)
    first_content = first.content

    def first_alive() -> bool:
        return any(isinstance(r, pt.AssistantMessage) for r in gc.get_referrers(first_content))

    assert first_alive()
    texts = []
    del first
    for left in (2, 1, 0):
        events = await _collect(scripted)
        texts.append(events[-1].message.content[0].text)
        assert scripted.pending_count == left
        gc.collect()
        assert not first_alive()  # the model holds no step it has already answered with
    assert texts == ["one", "two", "three"]
    scripted.set_responses([second, third])
    assert scripted.pending_count == 2
    assert (await _collect(scripted))[-1].message.content[0].text == "two"
    scripted.set_responses([])
    assert scripted.pending_count == 0
    assert (await _collect(scripted))[0].error.error_message == faux.NO_MORE_RESPONSES


async def test_token_delay_is_paced_by_the_trio_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    stamps: list[float] = []
    start = trio.current_time()
    scripted = faux.FauxModel([faux.assistant_message("one two three four")], token_delay=0.5)
    async with scripted(MODEL, pt.Context(), pt.StreamOptions()) as stream:
        async for event in stream:
            if event.type == "text_delta":
                stamps.append(trio.current_time() - start)
    assert stamps == [0.5, 1.0, 1.5, 2.0]


async def test_cancellation_mid_message_emits_nothing_more(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[str] = []
    scripted = faux.FauxModel([faux.assistant_message("a b c d e f")], token_delay=1.0)
    with trio.move_on_after(2.5) as scope:
        async with scripted(MODEL, pt.Context(), pt.StreamOptions()) as stream:
            async for event in stream:
                seen.append(event.type)
    assert scope.cancelled_caught
    assert seen == ["start", "text_start", "text_delta", "text_delta"]


async def test_already_cancelled_stream_starts_nothing() -> None:
    seen = []
    with trio.CancelScope() as scope:
        scope.cancel(reason="cancelled before the stream starts")
        async with faux.FauxModel([faux.assistant_message("x")])(
            MODEL, pt.Context(), pt.StreamOptions()
        ) as stream:
            async for event in stream:
                seen.append(event)  # pragma: no cover - must not happen
    assert seen == []


@pytest.mark.parametrize(
    ("chunker", "expected"),
    [
        (faux.by_words, [" lead ", "word"]),
        (faux.by_size(3), [" le", "ad ", "wor", "d"]),
        (faux.in_pieces(3), [" lea", "d w", "ord"]),
    ],
)
def test_chunkers_cover_the_text(chunker: faux.Chunker, expected: list[str]) -> None:
    assert list(chunker(" lead word")) == expected
    assert "".join(chunker(" lead word")) == " lead word"
    assert list(chunker("")) == [""]


async def test_stream_simple_dispatches_on_api_and_reports_empty_script() -> None:
    message = await pt.complete_simple(MODEL, pt.Context())
    assert message.stop_reason == "error"
    assert message.error_message == faux.NO_MORE_RESPONSES


def test_unknown_api_is_a_programmer_error() -> None:
    model = pt.Model(id="x", name="x", api="no-such-api", provider="p", base_url="")
    with pytest.raises(pt.ProviderNotFoundError, match="no-such-api"):
        pt.stream_simple(model, pt.Context())


async def test_registered_api_is_used_and_its_exceptions_become_errors() -> None:
    model = pt.Model(id="x", name="x", api="test-broken", provider="p", base_url="")

    async def broken(model: pt.Model, context: pt.Context, options: pt.StreamOptions):  # type: ignore[no-untyped-def]
        yield pt.providers.MessageBuilder(model).start()
        raise RuntimeError("kaput")

    pt.register_api("test-broken", broken)
    try:
        message = await pt.complete_simple(model, pt.Context())
    finally:
        pt.providers.unregister_api("test-broken")
    assert message.stop_reason == "error"
    assert message.error_message == "RuntimeError: kaput"


async def test_replaying_one_script_gives_fresh_messages_and_follows_the_chunker() -> None:
    usage = pt.Usage(input=3, output=4)
    script = faux.assistant_message(
        [faux.text("one two three"), faux.tool_call("t", {"a": [1]}, id="c1")], usage=usage
    )
    scripted = faux.FauxModel([script, script, script])
    first, second = await _collect(scripted), await _collect(scripted)
    assert [e.delta for e in first if e.type == "text_delta"] == ["one ", "two ", "three"]
    a, b = first[-1].message, second[-1].message
    b.timestamp = a.timestamp  # stamped at stream time: they may be a millisecond apart
    assert a == b and a is not b and a.content[0] is not b.content[0]
    assert a.usage == usage and a.usage is not usage and a.usage is not b.usage
    assert a.tool_calls[0].arguments == {"a": [1]}
    assert a.tool_calls[0].arguments is not script.tool_calls[0].arguments
    scripted.chunker = faux.in_pieces(2)  # a new chunker takes effect at once
    third = await _collect(scripted)
    assert [e.delta for e in third if e.type == "text_delta"] == ["one two", " three"]


async def test_a_chunker_of_the_application_is_called_for_every_text() -> None:
    seen: list[str] = []

    def chunker(text: str) -> list[str]:
        seen.append(text)
        return [text[: len(seen)], text[len(seen) :]]

    scripted = faux.FauxModel([faux.assistant_message("abc")] * 2, chunker=chunker)
    first, second = await _collect(scripted), await _collect(scripted)
    assert seen == ["abc", "abc"]
    assert [e.delta for e in first if e.type == "text_delta"] == ["a", "bc"]
    assert [e.delta for e in second if e.type == "text_delta"] == ["ab", "c"]
    assert [e.delta for e in first if e.type == "toolcall_delta"] == []


async def test_models_share_the_pieces_of_a_text_instead_of_keeping_their_own() -> None:
    # thousands of scripted agents (the S5x benchmark) must not each keep a cache of pieces
    assert faux.in_pieces(4) is faux.in_pieces(4) and faux.by_size(5) is faux.by_size(5)
    script = faux.assistant_message("a text cut into four pieces")
    one = faux.FauxModel([script], chunker=faux.in_pieces(4))
    two = faux.FauxModel([script], chunker=faux.in_pieces(4))
    first, second = await _collect(one), await _collect(two)
    deltas = [[e.delta for e in events if e.type == "text_delta"] for events in (first, second)]
    assert deltas[0] == deltas[1] and len(deltas[0]) == 4
    assert all(a is b for a, b in zip(*deltas, strict=True))  # the same pieces, cut once


def _faux_bytes(snapshot: tracemalloc.Snapshot) -> int:
    kept = snapshot.filter_traces([tracemalloc.Filter(True, faux.__file__)])
    return sum(stat.size for stat in kept.statistics("filename"))


def test_a_script_kept_a_step_ahead_does_not_grow_with_each_call() -> None:
    # A long-lived scripted model that is appended to before each call, with one step still
    # queued, never runs its script out: the taken steps' slots do not pile up.
    answer = faux.assistant_message("ok")
    scripted = faux.FauxModel([answer], record_calls=False)
    context = pt.Context("", [], [])
    options = pt.StreamOptions()

    def calls(count: int) -> None:
        for _ in range(count):
            scripted.append_responses([answer])
            scripted.stream(scripted.model, context, options)  # takes its step at call time

    calls(100)
    tracemalloc.start()
    try:
        before = _faux_bytes(tracemalloc.take_snapshot())
        calls(20_000)
        grown = _faux_bytes(tracemalloc.take_snapshot()) - before
    finally:
        tracemalloc.stop()
    assert (scripted.pending_count, scripted.call_count) == (1, 20_100)
    assert grown < 2_000  # 20,000 cleared slots would be ~160 KB


async def test_steps_come_in_order_across_appends_while_part_taken() -> None:
    # The script's cleared slots are dropped as it goes; what is left keeps its order.
    seen: list[tuple[int, int]] = []

    def step(tag: int) -> faux.FauxFactory:
        def answer(
            context: pt.Context, options: pt.StreamOptions, index: int
        ) -> pt.AssistantMessage:
            seen.append((tag, index))
            return faux.assistant_message(str(tag))

        return answer

    scripted = faux.FauxModel([step(0), step(1), step(2)])
    context = pt.Context("", [], [])
    tag = 3
    for round_ in range(6):
        for _ in range(round_ % 3 + 1):
            async with scripted.stream(scripted.model, context, pt.StreamOptions()) as events:
                async for _event in events:
                    pass
        scripted.append_responses([step(tag), step(tag + 1)])
        tag += 2
    for _ in range(scripted.pending_count):  # bounded: a broken script may never run out
        async with scripted.stream(scripted.model, context, pt.StreamOptions()) as events:
            async for _event in events:
                pass
    assert [t for t, _ in seen] == list(range(tag))
    assert [i for _, i in seen] == list(range(tag))
