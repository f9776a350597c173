"""Edge cases of the delivery and control paths: two runs started together, a tool update cut
short, a Ctrl-C in one listener, a stalled blocking reader, budgets under finish_turn, a
listener failing on agent_end in a durable session, agent_loop() and KeyboardInterrupt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .support import make_agent

EMPTY = {"type": "object", "properties": {}}


async def test_continue_and_prompt_started_together_on_a_session_agent_do_not_both_run(
    tmp_path: Path,
) -> None:
    scripted = faux.FauxModel(
        [faux.assistant_message("one"), *[faux.assistant_message("two " * 20)] * 3],
        token_delay=0.01,
    )
    outcomes: list[str] = []
    async with pt.open_session_store(tmp_path / "s.db") as store:
        state = pt.AgentState(model=scripted.model)
        async with store.open_agent("s", initial_state=state, stream_fn=scripted) as agent:
            await agent.prompt("hi")
            agent.steer("steer me")
            events: list[pt.AgentEvent] = []
            agent.subscribe(events.append)

            async def attempt(call: Any, *args: Any) -> None:
                try:
                    await call(*args)
                    outcomes.append("ran")
                except pt.AgentBusyError:
                    outcomes.append("busy")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(attempt, agent.continue_)
                # continue_() now waits for its recorder flush (a worker thread): start a
                # prompt in that window
                await trio.testing.wait_all_tasks_blocked()
                nursery.start_soon(attempt, agent.prompt, "concurrent")
    assert sorted(outcomes) == ["busy", "ran"]
    assert pt.testing.check_events(events) == []


async def test_a_tool_update_cut_short_by_the_tools_timeout_is_not_sent_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def slow(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        await on_update(pt.ToolResult([pt.TextContent("progress")]))
        await trio.sleep(10)
        return pt.ToolResult([pt.TextContent("late")])

    tool = pt.AgentTool("slow", "Slow", "slow", EMPTY, slow, timeout=0.05)
    script = [faux.assistant_message([faux.tool_call("slow", {}, id="c1")]),
              faux.assistant_message("long answer " * 20)]  # fmt: skip
    agent = make_agent(script, [tool], token_delay=0.01)
    seen: list[pt.AgentEvent] = []

    async def listener(event: pt.AgentEvent) -> None:
        seen.append(event)
        if isinstance(event, pt.ToolExecutionUpdate):
            await trio.sleep(0.1)  # slower than the tool's timeout

    agent.subscribe(listener)
    with trio.move_on_after(0.3):
        await agent.prompt("go")
    assert pt.testing.check_events(seen) == []


async def test_a_keyboard_interrupt_from_a_listener_still_lets_the_others_finish() -> None:
    async def ok(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent("ok")])

    agent = make_agent(
        [faux.assistant_message([faux.tool_call("ok", {}, id="a")]), faux.assistant_message("x")],
        [pt.AgentTool("ok", "Ok", "ok", EMPTY, ok)],
    )

    def ctrl_c(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.TurnEnd):
            raise KeyboardInterrupt

    seen: list[pt.AgentEvent] = []
    agent.subscribe(ctrl_c)
    agent.subscribe(seen.append)
    with pytest.raises(KeyboardInterrupt):
        await agent.prompt("go")
    assert pt.testing.check_events(seen) == []


async def test_a_stalled_blocking_reader_does_not_keep_the_closing_events_from_listeners(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([faux.assistant_message("hello " * 50)], (), token_delay=0.01)
    seen: list[pt.AgentEvent] = []
    agent.subscribe(seen.append)
    async with agent.events(max_buffer_size=2, on_overflow="block") as rx:  # never read
        with trio.move_on_after(0.1):
            await agent.prompt("hi")
        queued = [rx.receive_nowait() for _ in range(rx.statistics().current_buffer_used)]
    assert pt.testing.check_events(seen) == []
    assert isinstance(queued[-1], pt.AgentEnd)  # the reader still gets the whole close-out


async def test_budgets_hold_when_finish_turn_asks_to_continue() -> None:
    agent = make_agent(
        [faux.assistant_message(f"answer {i}") for i in range(10)],
        (),
        max_turns=3,
        finish_turn=lambda turn: "continue",
    )
    seen: list[pt.AgentEvent] = []
    agent.subscribe(seen.append)
    await agent.prompt("go")
    assert sum(isinstance(e, pt.TurnEnd) for e in seen) == 3
    assert agent.state.error_message is not None and "max_turns=3" in agent.state.error_message


async def test_a_listener_failing_on_agent_end_is_in_the_session_log_too(tmp_path: Path) -> None:
    scripted = faux.FauxModel([faux.assistant_message("hello")])

    def broken(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.AgentEnd):
            raise RuntimeError("listener broke on agent_end")

    state = pt.AgentState(model=scripted.model)
    async with pt.open_session_store(tmp_path / "s.db") as store:
        async with store.open_agent("s", initial_state=state, stream_fn=scripted) as agent:
            agent.subscribe(broken)
            await agent.prompt("hi")
            live = [m.role for m in agent.state.messages]
        async with store.open_agent("s", initial_state=state, stream_fn=scripted) as again:
            assert [m.role for m in again.state.messages] == live
            last = again.state.messages[-1]
            assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"


async def test_agent_loop_lets_a_keyboard_interrupt_out_plain() -> None:
    async def boom(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        raise KeyboardInterrupt

    scripted = faux.FauxModel([faux.assistant_message([faux.tool_call("boom", {}, id="b")])])
    context = pt.AgentContext("", [], [pt.AgentTool("boom", "B", "b", EMPTY, boom)])
    config = pt.AgentLoopConfig(scripted.model, stream_fn=scripted)
    with pytest.raises(KeyboardInterrupt) as info:
        async with pt.agent_loop([pt.UserMessage([pt.TextContent("go")])], context, config) as rx:
            async for _ in rx:
                pass
    assert type(info.value) is KeyboardInterrupt
