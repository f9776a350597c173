"""An ``Agent``'s run fails through the agent's own cancel scope (the one ``abort()`` cancels).

The agent passes that scope to the loop (``cancel_scope=``), which then opens none of its own:
a failing listener cancels it, the failure travels as a cancellation through the tool batch,
and ``prompt()`` returns normally. The scope must be the running run's, every run.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

import pi_trio as pt

from .grammar import check_events
from .support import faux, make_agent, sleeps, tool_results


def _fails_on_first_end(log: list[pt.AgentEvent]) -> Any:
    """A listener that records, and raises on the first tool_execution_end of a run."""
    failed = False

    def listener(event: pt.AgentEvent) -> None:
        nonlocal failed
        log.append(event)
        if isinstance(event, pt.AgentStart):
            failed = False
        if isinstance(event, pt.ToolExecutionEnd) and not failed:
            failed = True
            raise RuntimeError("listener broke")

    return listener


async def test_a_listener_failing_mid_batch_ends_the_run_and_stops_the_siblings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([sleeps(1, 50, 50), faux.assistant_message("never")])
    log: list[pt.AgentEvent] = []
    agent.subscribe(_fails_on_first_end(log))
    start = trio.current_time()
    await agent.prompt("go")  # returns normally: the failure is in the transcript
    assert trio.current_time() - start == 1  # the two 50 s siblings were cancelled at once
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage)
    assert (last.stop_reason, last.error_message) == ("error", "listener broke")
    assert [r[0] for r in tool_results(agent.state.messages)] == ["call_1", "call_2", "call_3"]
    assert check_events(log) == []
    assert not agent.is_running


async def test_each_run_fails_and_aborts_through_its_own_scope(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Two failing runs, then one aborted: a scope left over from an earlier run would let
    # the failure out of prompt() (cancelling a scope nobody is in) or miss the abort.
    script = [sleeps(1, 50), sleeps(1, 50), sleeps(50), faux.assistant_message("never")]
    agent = make_agent(script)
    log: list[pt.AgentEvent] = []
    agent.subscribe(_fails_on_first_end(log))
    for _ in range(2):
        start = trio.current_time()
        await agent.prompt("go")
        assert trio.current_time() - start == 1
        assert agent.state.error_message == "listener broke"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        agent.abort()
        await agent.wait_for_idle()
    assert trio.current_time() == start
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "aborted"
    starts = [i for i, event in enumerate(log) if isinstance(event, pt.AgentStart)]
    assert len(starts) == 3
    for begin, end in zip(starts, [*starts[1:], len(log)], strict=True):
        assert check_events(log[begin:end]) == []
