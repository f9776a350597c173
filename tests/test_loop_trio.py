"""The loop under Trio's rules: cancellation from the caller's scope, failures, sinks, batches."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .grammar import assert_event_grammar
from .support import (
    MODEL,
    PROMPT,
    RecordingSink,
    calls,
    faux,
    last_assistant,
    loop_setup,
)
from .transcript import assert_transcript_valid


def _last(context: pt.AgentContext) -> pt.AssistantMessage:
    return last_assistant(context.messages)


# --- cancellation ------------------------------------------------------------------------------


async def test_abort_mid_stream_keeps_partial_content(autojump_clock: Any) -> None:
    ctx, cfg, sink, scripted = loop_setup(
        [faux.assistant_message("one two three four five")], token_delay=1.0
    )
    with trio.move_on_after(2.5) as scope:
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert scope.cancelled_caught  # the caller's Cancelled was let out, not swallowed
    last = _last(ctx)
    assert (last.stop_reason, last.error_message) == ("aborted", "Request was aborted")
    assert last.content == [pt.TextContent("one two ")]
    assert sink.types[-3:] == ["message_end", "turn_end", "agent_end"]
    assert_event_grammar(sink.events)
    assert_transcript_valid(ctx.messages, aborted=True)
    assert len(scripted.calls) == 1


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_abort_mid_batch_gives_every_call_a_result(autojump_clock: Any, mode: str) -> None:
    script = [calls(("sleep", {"s": 1}), ("sleep", {"s": 10}), ("echo", {"text": "x"}))]
    ctx, cfg, sink, scripted = loop_setup(script, tool_execution=mode)
    with trio.move_on_after(5):
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    results = [m for m in ctx.messages if isinstance(m, pt.ToolResultMessage)]
    texts = [(r.tool_call_id, r.content[0].text, r.is_error) for r in results]  # type: ignore[union-attr]
    if mode == "parallel":
        expected_last = ("call_3", "x", False)
    else:  # call_3 never started: it gets a start event and the aborted result
        expected_last = ("call_3", "Tool execution was aborted", True)
    assert texts == [
        ("call_1", "slept 1", False),
        ("call_2", "Tool execution was aborted", True),
        expected_last,
    ]
    # pi's final shape: results, turn_end, then an aborted assistant turn with no content
    assert sink.types[-6:] == [
        "turn_end", "turn_start", "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    last = _last(ctx)
    assert (last.stop_reason, last.content) == ("aborted", [])
    assert len(scripted.calls) == 1  # the model is not called again
    assert_event_grammar(sink.events)
    assert_transcript_valid(ctx.messages, aborted=True)


async def test_uncooperative_tools_stop_at_once(autojump_clock: Any) -> None:
    script = [calls(*[("sleep", {"s": 2}) for _ in range(100)])]
    ctx, cfg, sink, _ = loop_setup(script)
    start = trio.current_time()
    with trio.move_on_after(0.05):
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert trio.current_time() - start == pytest.approx(0.05)
    aborted = [m for m in ctx.messages if isinstance(m, pt.ToolResultMessage) and m.is_error]
    assert len(aborted) == 100
    assert_transcript_valid(ctx.messages, aborted=True)


async def test_abort_during_prepare_phase_starts_the_rest(autojump_clock: Any) -> None:
    async def slow_before(ctx: pt.BeforeToolCallContext) -> None:
        if ctx.tool_call.id == "call_2":
            await trio.sleep(10)

    script = [calls(("echo", {"text": "a"}), ("echo", {"text": "b"}), ("echo", {"text": "c"}))]
    ctx, cfg, sink, _ = loop_setup(script, before_tool_call=slow_before)
    with trio.move_on_after(1):
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    starts = [e.tool_call_id for e in sink.events if isinstance(e, pt.ToolExecutionStart)]
    assert starts == ["call_1", "call_2", "call_3"]
    results = {
        m.tool_call_id: m.is_error for m in ctx.messages if isinstance(m, pt.ToolResultMessage)
    }
    assert results == {"call_1": True, "call_2": True, "call_3": True}  # none had executed yet
    assert_event_grammar(sink.events)
    assert_transcript_valid(ctx.messages, aborted=True)


async def test_sync_tool_is_abandoned_on_abort() -> None:
    release = threading.Event()

    def blocking(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        release.wait(30)
        return pt.ToolResult([pt.TextContent("late")])

    tool = pt.AgentTool("block", "Block", "blocks", {"type": "object"}, blocking)
    ctx, cfg, sink, _ = loop_setup([calls(("block", {}))], tools=[tool])
    try:
        with trio.move_on_after(0.2) as scope:
            await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
        assert scope.cancelled_caught
    finally:
        release.set()
    result = ctx.messages[2]
    assert isinstance(result, pt.ToolResultMessage) and result.is_error
    assert_transcript_valid(ctx.messages, aborted=True)


async def test_sync_tool_runs_in_a_thread_and_can_report_progress() -> None:
    def progress(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        on_update(pt.ToolResult([pt.TextContent("half")]))
        return pt.ToolResult([pt.TextContent(threading.current_thread().name)])

    tool = pt.AgentTool("progress", "P", "p", {"type": "object"}, progress)
    ctx, cfg, sink, _ = loop_setup([calls(("progress", {})), faux.assistant_message("ok")], [tool])
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    updates = [e for e in sink.events if isinstance(e, pt.ToolExecutionUpdate)]
    assert [u.partial_result.content for u in updates] == [[pt.TextContent("half")]]
    result = ctx.messages[2]
    assert isinstance(result, pt.ToolResultMessage)
    assert result.content[0] != pt.TextContent(threading.current_thread().name)


async def test_cancel_before_the_model_call_never_calls_it() -> None:
    ctx, cfg, sink, scripted = loop_setup([faux.assistant_message("x")])
    with trio.CancelScope() as scope:
        scope.cancel()
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert scripted.calls == []
    assert [m.role for m in ctx.messages] == ["user", "assistant"]
    assert _last(ctx).stop_reason == "aborted"
    assert_event_grammar(sink.events)


async def test_leaving_agent_loop_early_aborts_cleanly(autojump_clock: Any) -> None:
    ctx, cfg, _, _ = loop_setup([calls(("sleep", {"s": 5})), faux.assistant_message("done")])
    seen = []
    async with pt.agent_loop(PROMPT, ctx, cfg) as events:
        async for event in events:
            seen.append(event.type)
            if event.type == "tool_execution_start":
                break
    assert seen[-1] == "tool_execution_start"
    assert_transcript_valid(ctx.messages, aborted=True)
    assert _last(ctx).stop_reason == "aborted"


async def test_agent_loop_channel_carries_the_whole_run() -> None:
    ctx, cfg, _, _ = loop_setup([calls(("echo", {"text": "hi"})), faux.assistant_message("done")])
    async with pt.agent_loop(PROMPT, ctx, cfg, max_buffer_size=0) as events:
        seen = [event async for event in events]
    assert_event_grammar(seen)
    assert [m.role for m in ctx.messages] == ["user", "assistant", "toolResult", "assistant"]


async def test_close_out_deliveries_are_bounded_by_the_grace_period(autojump_clock: Any) -> None:
    class StuckAfterAbort(RecordingSink):
        aborted = False

        async def send(self, event: pt.AgentEvent) -> None:
            await super().send(event)
            if self.aborted:
                await trio.sleep_forever()

    ctx, cfg, _, _ = loop_setup([calls(("sleep", {"s": 10}))], close_timeout=3.0)
    sink = StuckAfterAbort()
    start = trio.current_time()
    with trio.move_on_after(1):
        sink.aborted = False
        async with trio.open_nursery() as nursery:

            async def flip() -> None:
                await trio.sleep(0.5)
                sink.aborted = True

            nursery.start_soon(flip)
            await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert trio.current_time() - start == pytest.approx(1 + 3.0)
    # the transcript is complete even though the closing events were never all delivered
    assert_transcript_valid(ctx.messages, aborted=True)
    assert sink.types[-1] != "agent_end"


# --- failures become messages ------------------------------------------------------------------


async def test_stream_fn_exception_is_an_error_message() -> None:
    def broken(model: pt.Model, context: pt.Context, options: pt.StreamOptions) -> Any:
        raise RuntimeError("no route to model")

    ctx = pt.AgentContext("sys", [], [])
    cfg = pt.AgentLoopConfig(model=MODEL, stream_fn=broken)
    sink = RecordingSink()
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    last = _last(ctx)
    assert (last.stop_reason, last.error_message, last.content) == (
        "error",
        "no route to model",
        [],
    )
    assert sink.types == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip


async def test_stream_failing_mid_message_keeps_partial() -> None:
    async def events(model: pt.Model, context: pt.Context, options: pt.StreamOptions) -> Any:
        partial = pt.AssistantMessage([], model.api, model.provider, model.id)
        yield pt.StreamStart(partial)
        block = pt.TextContent()
        partial.content.append(block)
        yield pt.TextStart(0, partial)
        block.append("par")
        yield pt.TextDelta(0, "par", partial)
        raise ConnectionResetError("peer went away")

    from contextlib import aclosing

    ctx = pt.AgentContext("sys", [], [])
    cfg = pt.AgentLoopConfig(model=MODEL, stream_fn=lambda m, c, o: aclosing(events(m, c, o)))
    sink = RecordingSink()
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    last = _last(ctx)
    assert last.stop_reason == "error"
    assert last.error_message == "ConnectionResetError: peer went away"
    assert last.content == [pt.TextContent("par")]
    assert_event_grammar(sink.events)


async def test_failing_sink_ends_the_run_with_a_valid_transcript() -> None:
    class Exploding(RecordingSink):
        async def send(self, event: pt.AgentEvent) -> None:
            await super().send(event)
            if isinstance(event, pt.ToolExecutionEnd):
                raise RuntimeError("listener broke")

    script = [calls(("echo", {"text": "a"}), ("echo", {"text": "b"}))]
    ctx, cfg, _, scripted = loop_setup(script)
    sink = Exploding()
    new = await pt.run_agent_loop(PROMPT, ctx, cfg, sink)  # returns: the failure is recorded
    last = _last(ctx)
    assert (last.stop_reason, last.error_message) == ("error", "listener broke")
    assert new[-1] is last
    assert len(scripted.calls) == 1
    assert_transcript_valid(ctx.messages)


async def test_tool_raising_an_exception_group_is_an_error_result() -> None:
    async def grouped(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        raise ExceptionGroup("two failures", [ValueError("a"), KeyError("b")])

    tool = pt.AgentTool("g", "G", "g", {"type": "object"}, grouped)
    ctx, cfg, sink, _ = loop_setup(
        [calls(("g", {}), ("g", {})), faux.assistant_message("ok")], [tool]
    )
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    results = [m for m in ctx.messages if isinstance(m, pt.ToolResultMessage)]
    assert all(r.is_error and "two failures" in r.content[0].text for r in results)  # type: ignore[union-attr]
    assert_transcript_valid(ctx.messages)


async def test_failing_steering_poll_ends_with_error() -> None:
    def poll() -> list[pt.AgentMessage]:
        raise RuntimeError("queue unavailable")

    ctx, cfg, sink, _ = loop_setup([faux.assistant_message("x")], get_steering_messages=poll)
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert _last(ctx).error_message == "queue unavailable"
    assert_event_grammar(sink.events)


# --- pi's rules --------------------------------------------------------------------------------


async def test_length_cut_tool_calls_are_not_executed() -> None:
    executed = []

    async def record(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        executed.append(tool_call_id)
        return pt.ToolResult([pt.TextContent("ran")])

    tool = pt.AgentTool("w", "W", "w", {"type": "object"}, record)
    cut = faux.assistant_message([faux.tool_call("w", {}, id="c1")], stop_reason="length")
    ctx, cfg, _, scripted = loop_setup([cut, faux.assistant_message("retry")], [tool])
    await pt.run_agent_loop(PROMPT, ctx, cfg, RecordingSink())
    assert executed == []
    result = ctx.messages[2]
    assert isinstance(result, pt.ToolResultMessage) and result.is_error
    assert "output token limit" in result.content[0].text  # type: ignore[union-attr]
    assert len(scripted.calls) == 2  # the model gets to retry
    assert_transcript_valid(ctx.messages)


async def test_errored_assistant_tool_calls_are_never_executed() -> None:
    broken = faux.assistant_message(
        [faux.tool_call("echo", {"text": "a"}, id="c1")], stop_reason="error", error_message="x"
    )
    ctx, cfg, sink, _ = loop_setup([broken])
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert "tool_execution_start" not in sink.types
    assert_transcript_valid(ctx.messages)


async def test_steering_is_injected_between_turns_and_follow_ups_at_the_end() -> None:
    steering: list[pt.AgentMessage] = []
    follow: list[pt.AgentMessage] = [pt.UserMessage("follow")]

    def drain(queue: list[pt.AgentMessage]) -> Any:
        def poll() -> list[pt.AgentMessage]:
            taken, queue[:] = list(queue), []
            return taken

        return poll

    def steer_while_tool_runs(ctx: pt.BeforeToolCallContext) -> None:
        steering.append(pt.UserMessage("steer"))  # arrives mid-turn: must wait for turn_end

    script = [
        calls(("echo", {"text": "a"})),
        faux.assistant_message("b"),
        faux.assistant_message("c"),
    ]
    ctx, cfg, sink, _ = loop_setup(
        script,
        get_steering_messages=drain(steering),
        get_follow_up_messages=drain(follow),
        before_tool_call=steer_while_tool_runs,
    )
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    summary = [m.content if isinstance(m, pt.UserMessage) else m.role for m in ctx.messages]
    assert summary == ["go", "assistant", "toolResult", "steer", "assistant", "follow", "assistant"]
    # the steering message comes after the batch's turn_end and before the next model call
    steer_at = next(
        i
        for i, e in enumerate(sink.events)
        if isinstance(e, pt.MessageStart) and e.message.content == "steer"
    )  # type: ignore[union-attr]
    assert sink.types[steer_at - 2 : steer_at] == ["turn_end", "turn_start"]


async def test_should_stop_after_turn_ends_the_run() -> None:
    script = [calls(("echo", {"text": "a"})), faux.assistant_message("never")]
    ctx, cfg, sink, scripted = loop_setup(script, should_stop_after_turn=lambda c: True)
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert len(scripted.calls) == 1
    assert sink.types[-2:] == ["turn_end", "agent_end"]


async def test_api_key_is_resolved_before_every_request() -> None:
    keys = iter(["k1", "k2"])
    script = [calls(("echo", {"text": "a"})), faux.assistant_message("done")]
    ctx, cfg, _, scripted = loop_setup(script, get_api_key=lambda provider: next(keys))
    await pt.run_agent_loop(PROMPT, ctx, cfg, RecordingSink())
    assert [c.options.api_key for c in scripted.calls] == ["k1", "k2"]


async def test_continue_refuses_bad_transcripts() -> None:
    ctx, cfg, sink, _ = loop_setup([])
    with pytest.raises(pt.ContinueError, match="no messages"):
        await pt.run_agent_loop_continue(ctx, cfg, sink)
    ctx.messages.append(faux.assistant_message("x"))
    with pytest.raises(pt.ContinueError, match="Cannot continue from message role: assistant"):
        await pt.run_agent_loop_continue(ctx, cfg, sink)


async def test_request_context_is_a_snapshot_of_the_transcript() -> None:
    script = [calls(("echo", {"text": "a"})), faux.assistant_message("done")]
    ctx, cfg, _, scripted = loop_setup(script)
    await pt.run_agent_loop(PROMPT, ctx, cfg, RecordingSink())
    first, second = (list(c.context.messages) for c in scripted.calls)
    assert [m.role for m in first] == ["user"]
    assert [m.role for m in second] == ["user", "assistant", "toolResult"]
    with pytest.raises(AttributeError):
        scripted.calls[0].context.messages.append(pt.UserMessage("x"))  # type: ignore[attr-defined]
