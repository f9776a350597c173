"""pt.Agent: pi's agent tests (agent.test.ts) ported, and the Trio rules of DESIGN.md section 4."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
import trio
import trio.lowlevel
import trio.testing

import pi_trio as pt

from .grammar import assert_event_grammar
from .support import (
    SLEEP,
    TOOL_ABORTED_TEXT,
    assert_aborted,
    assert_idle,
    faux,
    last_assistant,
    make_agent,
    make_scripted_agent,
    reachable,
    record,
    sleeps,
    tool_results,
    user_texts,
)
from .transcript import assert_transcript_valid


def _assert_idle_and_valid(agent: pt.Agent) -> None:
    assert_idle(agent)
    assert_transcript_valid(agent.state.messages, aborted=True)


# --- ported from pi's agent.test.ts -----------------------------------------------------------


def test_default_state() -> None:
    agent = pt.Agent()
    state = agent.state
    assert (state.system_prompt, state.thinking_level) == ("", "off")
    assert state.model.id == "unknown"
    assert state.tools == [] and state.messages == []
    assert state.is_streaming is False and state.streaming_message is None
    assert state.pending_tool_calls == frozenset() and state.error_message is None


def test_custom_initial_state() -> None:
    model = pt.get_model("openai", "gpt-4o-mini")
    agent = pt.Agent(pt.AgentState(system_prompt="Be helpful.", model=model, thinking_level="low"))
    assert agent.state.system_prompt == "Be helpful."
    assert agent.state.model is model
    assert agent.state.thinking_level == "low"


async def test_subscribe_and_unsubscribe() -> None:
    agent = make_agent([faux.assistant_message("a"), faux.assistant_message("b")])
    seen: list[str] = []
    unsubscribe = agent.subscribe(lambda event: seen.append(event.type))
    agent.state.system_prompt = "changed"  # state changes emit nothing
    assert seen == []
    await agent.prompt("one")
    count = len(seen)
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"
    unsubscribe()
    await agent.prompt("two")
    assert len(seen) == count


async def test_a_listener_subscribed_twice_is_called_once_as_in_pi() -> None:
    agent = make_agent([faux.assistant_message(text) for text in "abcd"])

    class Screen:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def on_event(self, event: pt.AgentEvent) -> None:
            self.seen.append(event.type)

    screen = Screen()
    first = agent.subscribe(screen.on_event)
    again = agent.subscribe(screen.on_event)  # a bound method made again: the same listener
    await agent.prompt("one")
    assert screen.seen.count("agent_start") == 1
    again()  # either function unsubscribes it, as a Set's delete does
    await agent.prompt("two")
    assert screen.seen.count("agent_start") == 1
    first()  # a no-op now
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    stop = agent.subscribe(events.append)  # a builtin method made again: one listener too
    await agent.prompt("three")
    assert [e.type for e in events].count("agent_start") == 1
    stop()
    await agent.prompt("four")
    assert [e.type for e in events].count("agent_start") == 1


async def test_listeners_that_compare_equal_are_still_two() -> None:
    @attrs.define
    class Collector:
        seen: list[str] = attrs.Factory(list)

        def __call__(self, event: pt.AgentEvent) -> None:
            self.seen.append(event.type)

    agent = make_agent([faux.assistant_message("a"), faux.assistant_message("b")])
    ui, audit = Collector(), Collector()
    assert ui == audit
    agent.subscribe(ui)
    stop_audit = agent.subscribe(audit)
    await agent.prompt("one")
    assert ui.seen and audit.seen == ui.seen
    stop_audit()
    await agent.prompt("two")
    assert ui.seen.count("agent_start") == 2 and audit.seen.count("agent_start") == 1


def test_assigning_messages_and_tools_copies() -> None:
    agent = pt.Agent()
    messages: list[pt.AgentMessage] = [pt.UserMessage("Hello")]
    agent.state.messages = messages
    assert agent.state.messages == messages and agent.state.messages is not messages
    tools = [SLEEP]
    agent.state.tools = tools
    assert agent.state.tools == tools and agent.state.tools is not tools


def test_queued_messages_are_not_in_the_transcript() -> None:
    agent = pt.Agent()
    agent.steer(pt.UserMessage("steer"))
    agent.follow_up("follow")
    assert agent.state.messages == []
    assert agent.has_queued_messages()
    agent.clear_all_queues()
    assert not agent.has_queued_messages()


async def test_abort_while_idle_does_nothing(autojump_clock: trio.testing.MockClock) -> None:
    agent = make_agent(
        [faux.assistant_message("first answer"), faux.assistant_message("one two three")],
        token_delay=1.0,
    )
    agent.abort()
    agent.abort()
    assert agent.state.is_streaming is False and agent.state.messages == []
    await agent.prompt("go")  # the idle aborts are not kept for the next run
    last = last_assistant(agent.state.messages)
    assert (last.stop_reason, last.content) == ("stop", [pt.TextContent("first answer")])
    assert agent.state.error_message is None
    async with trio.open_nursery() as nursery:  # and abort() does end a run that is going
        nursery.start_soon(agent.prompt, "again")
        await trio.sleep(1.5)
        agent.abort()
    assert_aborted(agent)


async def test_prompt_and_continue_while_streaming_raise_busy(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent, scripted = make_scripted_agent(
        [faux.assistant_message("a long answer " * 20)], token_delay=0.01
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "First message")
        await trio.testing.wait_all_tasks_blocked()
        assert agent.state.is_streaming is True
        with pytest.raises(pt.AgentBusyError, match=r"already processing a prompt\. Use steer"):
            await agent.prompt("Second message")
        with pytest.raises(pt.AgentBusyError, match="Wait for completion before continuing"):
            await agent.continue_()
        agent.abort()
    assert_aborted(agent)
    assert user_texts(agent.state.messages) == ["First message"]  # the busy calls added nothing
    assert len(scripted.calls) == 1
    assert_transcript_valid(agent.state.messages)


async def test_continue_processes_queued_follow_up_after_assistant_turn() -> None:
    agent = make_agent([faux.assistant_message("Processed")])
    agent.state.messages = [pt.UserMessage("Initial"), faux.assistant_message("Initial response")]
    agent.follow_up(pt.UserMessage("Queued follow-up"))
    await agent.continue_()
    assert any(getattr(m, "content", None) == "Queued follow-up" for m in agent.state.messages)
    assert agent.state.messages[-1].role == "assistant"


async def test_continue_keeps_one_at_a_time_steering_from_assistant_tail() -> None:
    agent = make_agent(
        [faux.assistant_message("Processed 1"), faux.assistant_message("Processed 2")]
    )
    agent.state.messages = [pt.UserMessage("Initial"), faux.assistant_message("Initial response")]
    agent.steer("Steering 1")
    agent.steer("Steering 2")
    await agent.continue_()
    assert [m.role for m in agent.state.messages[-4:]] == ["user", "assistant", "user", "assistant"]


async def test_session_id_and_thinking_level_reach_the_stream_function() -> None:
    agent, scripted = make_scripted_agent(
        [faux.assistant_message("ok"), faux.assistant_message("ok")], (), session_id="abc"
    )
    await agent.prompt("hello")
    agent.session_id = "def"
    agent.state.thinking_level = "high"
    await agent.prompt("again")
    assert [c.options.session_id for c in scripted.calls] == ["abc", "def"]
    assert [c.options.reasoning for c in scripted.calls] == [None, "high"]


# --- aborts (DESIGN.md section 4) ----------------------------------------------------------------


async def test_abort_during_streaming(autojump_clock: trio.testing.MockClock) -> None:
    agent = make_agent([faux.assistant_message("one two three four")], token_delay=1.0)
    events = record(agent)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")  # prompt() returns normally after abort()
        await trio.sleep(2.5)
        agent.abort()
        agent.abort()  # idempotent
        await agent.wait_for_idle()
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage)
    assert (last.stop_reason, last.content) == ("aborted", [pt.TextContent("one two ")])
    assert agent.state.error_message == "Request was aborted"
    assert_event_grammar(events)
    _assert_idle_and_valid(agent)


async def test_abort_during_tool_batch(autojump_clock: trio.testing.MockClock) -> None:
    agent, scripted = make_scripted_agent([sleeps(1, 10, 10), faux.assistant_message("never")])
    events = record(agent)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(2)
        assert agent.state.pending_tool_calls == {"call_2", "call_3"}
        agent.abort()
        aborted_at = trio.current_time()
    assert trio.current_time() == aborted_at  # the run did not wait for the 10 s tools
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "toolResult", "assistant"]
    assert tool_results(agent.state.messages) == [
        ("call_1", "slept 1", False),
        ("call_2", TOOL_ABORTED_TEXT, True),
        ("call_3", TOOL_ABORTED_TEXT, True),
    ]
    assert last_assistant(agent.state.messages).content == []  # pi's aborted turn
    assert_aborted(agent)
    assert len(scripted.calls) == 1  # the model is not asked again
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages)


async def test_callers_deadline_aborts_and_propagates(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([sleeps(10)])
    with trio.move_on_after(3) as scope:
        await agent.prompt("go")
    assert scope.cancelled_caught
    _assert_idle_and_valid(agent)
    assert agent.state.messages[-1].role == "assistant"


async def test_uncooperative_tools_do_not_delay_abort(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([sleeps(*([2.0] * 100))])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(0.05)
        aborted_at = trio.current_time()
        agent.abort()
        await agent.wait_for_idle()
        assert trio.current_time() == aborted_at  # no virtual time passes: nothing is awaited
    _assert_idle_and_valid(agent)


async def test_wait_for_idle_returns_at_once_when_idle() -> None:
    agent = make_agent([faux.assistant_message("x")])
    with trio.fail_after(1):
        await agent.wait_for_idle()
    await agent.prompt("go")
    with trio.fail_after(1):
        await agent.wait_for_idle()


class TaskCounter(trio.abc.Instrument):
    def __init__(self) -> None:
        self.live = 0
        self.peak = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.live += 1
        self.peak = max(self.peak, self.live)

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self.live -= 1


async def test_no_task_outlives_a_run(autojump_clock: trio.testing.MockClock) -> None:
    agent = make_agent([sleeps(1, 2, 3), faux.assistant_message("done"), sleeps(5, 5)])
    counter = TaskCounter()
    trio.lowlevel.add_instrument(counter)
    try:
        await agent.prompt("go")
        assert counter.peak >= 3  # the batch ran its tools in tasks
        assert counter.live == 0  # and none is left once prompt() returns
        with trio.move_on_after(1):
            await agent.prompt("again")
        assert counter.live == 0  # nor after an abort
    finally:
        trio.lowlevel.remove_instrument(counter)


async def test_is_streaming_until_agent_end_is_delivered() -> None:
    agent = make_agent([faux.assistant_message("x")])
    seen: list[bool] = []

    async def listener(event: pt.AgentEvent) -> None:
        if event.type == "agent_end":
            await trio.lowlevel.checkpoint()
            seen.append(agent.state.is_streaming)

    agent.subscribe(listener)
    await agent.prompt("go")
    assert seen == [True]
    assert agent.state.is_streaming is False


# --- failures, barrier, queues --------------------------------------------------------------


async def test_listener_that_raises_ends_the_run_with_a_valid_transcript() -> None:
    agent = make_agent([sleeps(0, 0), faux.assistant_message("never")])

    def explode(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.ToolExecutionEnd):
            raise RuntimeError("listener exploded")

    agent.subscribe(explode)
    await agent.prompt("go")  # returns: the failure is in the transcript
    assert agent.state.error_message == "listener exploded"
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"
    assert_transcript_valid(agent.state.messages)


async def test_stream_function_that_raises_is_an_error_message() -> None:
    def broken(model: pt.Model, context: pt.Context, options: pt.StreamOptions) -> Any:
        raise ConnectionError("dns failure")

    agent = pt.Agent(pt.AgentState(model=pt.get_model("faux", "faux-1")), stream_fn=broken)
    events = record(agent)
    await agent.prompt("go")
    assert agent.state.error_message == "ConnectionError: dns failure"
    assert [e.type for e in events][-3:] == ["message_end", "turn_end", "agent_end"]


async def test_before_tool_call_sees_the_assistant_message_in_state() -> None:
    seen: list[str] = []

    def before(ctx: pt.BeforeToolCallContext) -> None:
        seen.append(agent.state.messages[-1].role)
        assert agent.state.messages[-1] is ctx.assistant_message

    agent = make_agent([sleeps(0), faux.assistant_message("done")], before_tool_call=before)
    await agent.prompt("go")
    assert seen == ["assistant"]


async def test_listener_sees_state_already_updated() -> None:
    agent = make_agent([sleeps(0), faux.assistant_message("done")])
    checks: list[bool] = []

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd):
            checks.append(agent.state.messages[-1] is event.message)
        elif isinstance(event, pt.ToolExecutionStart):
            checks.append(event.tool_call_id in agent.state.pending_tool_calls)

    agent.subscribe(listener)
    await agent.prompt("go")
    assert checks and all(checks)


async def test_should_stop_after_turn_is_honoured() -> None:
    agent = make_agent(
        [sleeps(0), faux.assistant_message("never")], should_stop_after_turn=lambda c: True
    )
    await agent.prompt("go")
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]


async def test_queued_messages_survive_an_abort(autojump_clock: trio.testing.MockClock) -> None:
    agent = make_agent([sleeps(10), faux.assistant_message("later")])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(1)
        agent.steer("steer me")
        agent.follow_up("and then this")
        agent.abort()
    # aborted mid-batch: steering is polled only after the turn, so both are still queued
    assert agent.has_queued_messages()
    assert not any(
        getattr(m, "content", None) == [pt.TextContent("steer me")] for m in agent.state.messages
    )
    await agent.continue_()  # the assistant tail takes the steering message as its prompt
    texts = [m.content for m in agent.state.messages if isinstance(m, pt.UserMessage)]
    assert texts[-2:] == [[pt.TextContent("steer me")], [pt.TextContent("and then this")]]


async def test_reset_clears_everything_and_refuses_during_a_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([sleeps(5), faux.assistant_message("x")])
    agent.follow_up("queued")  # polled only when the run would stop: still queued after abort
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(1)
        before = list(agent.state.messages)
        with pytest.raises(pt.AgentBusyError, match="abort"):
            agent.reset()
        assert agent.state.messages == before and agent.has_queued_messages()  # untouched
        assert agent.state.is_streaming is True
        agent.abort()
    assert_aborted(agent)  # so there is an error_message for reset() to clear
    assert agent.has_queued_messages()
    agent.reset()
    assert agent.state.messages == [] and not agent.has_queued_messages()
    assert agent.state.error_message is None
    assert_idle(agent)


async def test_one_agent_used_from_several_tasks(autojump_clock: trio.testing.MockClock) -> None:
    """prompt in one task, steer / follow_up / abort / busy calls from others."""
    long_call = faux.assistant_message([faux.tool_call("sleep", {"s": 100}, id="long")])
    agent, scripted = make_scripted_agent(
        [sleeps(1), faux.assistant_message("after steer"), long_call,
         faux.assistant_message("never")]
    )  # fmt: skip
    events = record(agent)
    busy: list[str] = []

    async def steerer() -> None:
        await trio.sleep(0.5)
        agent.steer("change course")
        agent.follow_up("one more thing")  # answered by the 100 s tool call

    async def impatient() -> None:
        await trio.sleep(0.7)
        try:
            await agent.prompt("me too")
        except pt.AgentBusyError as exc:
            busy.append(str(exc))

    async def aborter() -> None:
        await trio.sleep(50)
        assert agent.state.pending_tool_calls == {"long"}
        agent.abort()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "start")
        nursery.start_soon(steerer)
        nursery.start_soon(impatient)
        nursery.start_soon(aborter)
    assert trio.current_time() == 50  # the run ended at the abort, not when the tool would
    assert user_texts(agent.state.messages) == ["start", "change course", "one more thing"]
    assert len(busy) == 1 and "already processing a prompt" in busy[0]
    assert tool_results(agent.state.messages)[-1] == ("long", TOOL_ABORTED_TEXT, True)
    assert len(scripted.calls) == 3  # "never" was never asked for
    assert_aborted(agent)
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages)


# --- events() channels -----------------------------------------------------------------------


async def test_events_channel_receives_the_run() -> None:
    agent = make_agent([sleeps(0), faux.assistant_message("done")])
    received: list[pt.AgentEvent] = []
    async with agent.events() as rx, trio.open_nursery() as nursery:

        async def read() -> None:
            async for event in rx:
                received.append(event)
                if event.type == "agent_end":
                    return

        nursery.start_soon(read)
        await agent.prompt("go")
    assert_event_grammar(received)


async def test_full_events_channel_drops_only_streaming_updates() -> None:
    agent = make_agent([faux.assistant_message("a b c d e f g h i j k l")])
    async with agent.events(max_buffer_size=2) as rx:
        await agent.prompt("go")  # nobody reads while the run goes: the run is not held up
        received = []
        while True:
            try:
                received.append(rx.receive_nowait())
            except trio.WouldBlock:
                break
    types = [e.type for e in received]
    assert "message_update" not in types[4:]  # the buffer was full after the first few
    assert types.count("message_end") == 2 and types[-1] == "agent_end"
    assert_event_grammar([e for e in received if e.type != "message_update"])


async def test_closed_events_reader_is_forgotten() -> None:
    agent = make_agent([faux.assistant_message("x"), faux.assistant_message("y")])
    async with agent.events(max_buffer_size=math.inf) as rx:
        assert reachable(agent, rx)  # subscribed: the agent holds the channel
        await rx.aclose()
        await agent.prompt("go")  # a reader that went away does not break the run
        assert not reachable(agent, rx)  # the first event it could not take dropped it
        assert agent.state.error_message is None
    await agent.prompt("again")
    assert agent.state.error_message is None


async def test_events_subscription_ends_with_its_block() -> None:
    agent = make_agent([faux.assistant_message("x")])
    async with agent.events() as rx:
        assert reachable(agent, rx)
    assert not reachable(agent, rx)  # no run needed: leaving the block unsubscribes
    with pytest.raises(trio.ClosedResourceError):
        rx.receive_nowait()
    await agent.prompt("go")
    assert agent.state.error_message is None
