"""The loop's seams: a ``pt.RunSink`` has each event applied before it is delivered, and is
told when the close-out begins; ``cancel_scope=`` is the run's abort switch."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .grammar import check_events
from .support import PROMPT, NullRecorder, calls, loop_setup, make_agent, sleeps
from .transcript import assert_transcript_valid

SCRIPT = [sleeps(10), pt.faux.assistant_message("done")]
ECHO_SCRIPT = [calls(("echo", {"text": "hi"})), pt.faux.assistant_message("all done")]


class LoggingRunSink:
    """A RunSink that logs what the loop asks of it, in order."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.delivered: list[pt.AgentEvent] = []

    async def send(self, event: pt.AgentEvent) -> None:
        raise AssertionError("the loop delivers to a RunSink through deliver_nowait")

    def apply(self, event: pt.AgentEvent) -> None:
        self.log.append(("apply", event.type))

    def deliver_nowait(self, event: pt.AgentEvent) -> Awaitable[None] | None:
        self.log.append(("deliver", event.type))
        self.delivered.append(event)
        return None

    def closing(self) -> None:
        self.log.append(("closing", ""))


def test_a_sink_with_the_four_methods_is_a_run_sink_and_a_channel_is_not() -> None:
    send, _ = trio.open_memory_channel[pt.AgentEvent](1)
    assert isinstance(LoggingRunSink(), pt.RunSink)
    assert not isinstance(send, pt.RunSink)


async def test_every_event_is_applied_before_it_is_delivered() -> None:
    ctx, cfg, _, _ = loop_setup([calls(("echo", {"text": "hi"})), pt.faux.assistant_message("ok")])
    sink = LoggingRunSink()
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert sink.delivered[-1].type == "agent_end"
    previous = None
    for step, kind in sink.log:
        if step == "deliver" and kind != "message_update":
            assert previous == ("apply", kind), (kind, previous)
        previous = (step, kind)
    # the scripted model keeps one partial per message: its updates change nothing to apply
    assert ("deliver", "message_update") in sink.log
    assert ("apply", "message_update") not in sink.log
    assert ("closing", "") not in sink.log  # a run that ends by itself has no close-out


async def test_the_close_out_applies_every_closing_event_before_it_delivers_any(
    autojump_clock: Any,
) -> None:
    ctx, cfg, _, _ = loop_setup(SCRIPT)
    sink = LoggingRunSink()
    with trio.move_on_after(1):
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    closing = sink.log.index(("closing", ""))
    before, after = sink.log[:closing], sink.log[closing + 1 :]
    assert before[-1][0] == "apply" and {step for step, _ in after} == {"deliver"}
    closing_applied = [kind for step, kind in reversed(before) if step == "apply"]
    assert [kind for _, kind in after] == closing_applied[: len(after)][::-1]
    assert after[-1] == ("deliver", "agent_end")
    assert_transcript_valid(ctx.messages, aborted=True)


async def test_cancelling_the_given_scope_aborts_the_run_which_returns() -> None:
    ctx, cfg, sink, _ = loop_setup(SCRIPT)
    scope = trio.CancelScope()
    async with trio.open_nursery() as nursery:

        async def abort_once_the_tool_runs() -> None:
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()

        nursery.start_soon(abort_once_the_tool_runs)
        messages = await pt.run_agent_loop(PROMPT, ctx, cfg, sink, cancel_scope=scope)
    assert "tool_execution_start" in sink.types
    assert messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert_transcript_valid(ctx.messages, aborted=True)


async def test_a_scope_cancelled_before_the_run_never_calls_the_model() -> None:
    ctx, cfg, sink, scripted = loop_setup(SCRIPT)
    scope = trio.CancelScope()
    scope.cancel()
    messages = await pt.run_agent_loop(PROMPT, ctx, cfg, sink, cancel_scope=scope)
    assert scripted.calls == []
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert sink.types[0] == "agent_start" and sink.types[-1] == "agent_end"


async def test_a_failing_sink_cancels_the_given_scope_and_the_run_ends_in_error() -> None:
    ctx, cfg, _, _ = loop_setup(SCRIPT)

    class Failing:
        async def send(self, event: pt.AgentEvent) -> None:
            if event.type == "tool_execution_start":
                raise ValueError("sink fail")

    scope = trio.CancelScope()
    messages = await pt.run_agent_loop(PROMPT, ctx, cfg, Failing(), cancel_scope=scope)
    assert scope.cancel_called
    assert messages[-1].error_message == "ValueError: sink fail"  # type: ignore[union-attr]
    assert_transcript_valid(ctx.messages)


async def test_a_scope_cannot_serve_two_runs() -> None:
    ctx, cfg, sink, _ = loop_setup([pt.faux.assistant_message("one")])
    scope = trio.CancelScope()
    await pt.run_agent_loop(PROMPT, ctx, cfg, sink, cancel_scope=scope)
    ctx2, cfg2, sink2, _ = loop_setup([pt.faux.assistant_message("two")])
    with pytest.raises(RuntimeError):
        await pt.run_agent_loop(PROMPT, ctx2, cfg2, sink2, cancel_scope=scope)


async def test_an_agent_passes_the_scope_abort_cancels(autojump_clock: Any) -> None:

    agent = make_agent(SCRIPT)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        agent.abort()
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "aborted"


# --- a plain sink's own attributes are its own ----------------------------------------------


class _SinkWithAScope:
    """A user's sink that happens to keep a ``cancel_scope`` of its own (a common Trio name):
    it must not become the run's scope. Its send fails once the tool call has ended."""

    def __init__(self, scope: trio.CancelScope | None) -> None:
        self.events: list[pt.AgentEvent] = []
        self.cancel_scope = scope

    async def send(self, event: pt.AgentEvent) -> None:
        self.events.append(event)
        if event.type == "tool_execution_end":
            raise ValueError("sink fail")


def _shape(messages: list[pt.AgentMessage]) -> list[tuple[str, str | None]]:
    return [(type(m).__name__, getattr(m, "stop_reason", None)) for m in messages]


EXPECTED = [
    ("UserMessage", None),
    ("AssistantMessage", "toolUse"),
    ("ToolResultMessage", None),
    ("AssistantMessage", "error"),
]


async def test_a_failing_sink_with_its_own_entered_scope_cancels_only_the_run(
    autojump_clock: Any,
) -> None:
    ctx, cfg, _, _ = loop_setup(ECHO_SCRIPT)
    reached = False
    with trio.CancelScope() as outer:
        sink = _SinkWithAScope(outer)
        messages = await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
        await trio.lowlevel.checkpoint()  # the caller's scope is not cancelled
        reached = True
    assert reached and not outer.cancel_called
    assert _shape(messages) == EXPECTED
    check_events(sink.events)


async def test_a_failing_sink_with_a_fresh_scope_ends_the_run_in_error(autojump_clock: Any) -> None:
    ctx, cfg, _, _ = loop_setup(ECHO_SCRIPT)
    sink = _SinkWithAScope(trio.CancelScope())
    messages = await pt.run_agent_loop(PROMPT, ctx, cfg, sink)  # returns: no ValueError
    assert _shape(messages) == EXPECTED
    assert messages[-1].error_message == "ValueError: sink fail"  # type: ignore[union-attr]
    check_events(sink.events)


class _SinkWithCommonNames:
    """A user's sink whose other attributes happen to be named ``deliver`` and ``closing``
    (a RunSink has the methods apply, deliver_nowait and closing: these are just data)."""

    def __init__(self) -> None:
        self.events: list[pt.AgentEvent] = []
        self.deliver = "by hand"
        self.closing = False

    async def send(self, event: pt.AgentEvent) -> None:
        self.events.append(event)


async def test_a_sink_with_a_deliver_and_a_closing_attribute_is_sent_to_and_closed(
    autojump_clock: Any,
) -> None:
    ctx, cfg, _, _ = loop_setup([calls(("sleep", {"s": 10_000})), *ECHO_SCRIPT])
    sink = _SinkWithCommonNames()
    with trio.move_on_after(1):  # aborted while the tool sleeps: the close-out runs
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    check_events(sink.events)
    assert sink.events[-1].type == "agent_end"
    assert ctx.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert (sink.deliver, sink.closing) == ("by hand", False)


# --- a sink that fails in apply or closing, half a RunSink, a misused scope ------------------


class ApplyFails(LoggingRunSink):
    """Fails to apply one kind of event (its ``apply`` raises ``error``)."""

    def __init__(self, kind: str, error: BaseException) -> None:
        super().__init__()
        self.kind, self.error = kind, error

    def apply(self, event: pt.AgentEvent) -> None:
        super().apply(event)
        if event.type == self.kind:
            raise self.error


@pytest.mark.parametrize(
    "kind", ["agent_start", "message_start", "tool_execution_start", "tool_execution_end"]
)
async def test_a_sink_whose_apply_raises_ends_the_run_in_error_with_everything_delivered(
    kind: str, autojump_clock: Any
) -> None:
    ctx, cfg, _, _ = loop_setup(ECHO_SCRIPT)
    sink = ApplyFails(kind, ValueError("apply broke"))
    messages = await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert messages[-1].error_message == "ValueError: apply broke"  # type: ignore[union-attr]
    assert_transcript_valid(ctx.messages)
    assert check_events(sink.delivered) == []  # the failing event too, then pi's shape
    assert kind in [event.type for event in sink.delivered]


async def test_a_ctrl_c_from_a_sinks_apply_leaves_a_valid_run() -> None:
    ctx, cfg, _, _ = loop_setup(ECHO_SCRIPT)
    sink = ApplyFails("tool_execution_start", KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert_transcript_valid(ctx.messages, aborted=True)
    assert check_events(sink.delivered) == []


async def test_a_recorder_whose_record_raises_ends_the_agents_run_in_error() -> None:
    class Broken(NullRecorder):
        def record(self, event: pt.AgentEvent) -> bool:
            if event.type == "tool_execution_end":
                raise OSError("disk full")
            return False

    agent = make_agent(ECHO_SCRIPT, recorder=Broken())
    seen: list[pt.AgentEvent] = []
    agent.subscribe(seen.append)
    await agent.prompt("go")
    assert agent.state.error_message == "OSError: disk full"
    assert_transcript_valid(agent.state.messages)
    assert check_events(seen) == [] and seen[-1].type == "agent_end"


async def test_a_sink_whose_closing_raises_still_gets_the_closing_events(
    autojump_clock: Any,
) -> None:
    class ClosingFails(LoggingRunSink):
        def closing(self) -> None:
            super().closing()
            raise RuntimeError("closing broke")

    ctx, cfg, _, _ = loop_setup(SCRIPT)
    sink = ClosingFails()
    with trio.move_on_after(1) as deadline:  # the caller's Cancelled still reaches its scope
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    assert deadline.cancelled_caught
    assert sink.delivered[-1].type == "agent_end"
    assert check_events(sink.delivered) == []
    assert_transcript_valid(ctx.messages, aborted=True)


async def test_half_a_run_sink_is_refused_not_half_used() -> None:
    class SendAndApply:
        async def send(self, event: pt.AgentEvent) -> None:
            pass

        def apply(self, event: pt.AgentEvent) -> None:
            pass

    ctx, cfg, _, _ = loop_setup(ECHO_SCRIPT)
    with pytest.raises(TypeError, match=r"has apply\(\) but not deliver_nowait\(\) and closing"):
        await pt.run_agent_loop(PROMPT, ctx, cfg, SendAndApply())
    assert ctx.messages == []


async def test_a_misused_cancel_scope_is_named() -> None:
    ctx, cfg, sink, _ = loop_setup(ECHO_SCRIPT)
    with pytest.raises(TypeError, match=r"cancel_scope must be a fresh trio\.CancelScope"):
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink, cancel_scope=object())  # type: ignore[arg-type]
    with (
        trio.CancelScope() as entered,
        pytest.raises(RuntimeError, match="was entered already") as caught,
    ):
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink, cancel_scope=entered)
    assert "single 'with' block" in str(caught.value.__cause__)
    assert ctx.messages == [] and sink.events == []


def test_a_memory_channel_is_an_event_sink() -> None:
    send, _ = trio.open_memory_channel[pt.AgentEvent](0)
    assert isinstance(send, pt.EventSink) and not isinstance(send, pt.RunSink)
