"""An abort that unwinds a tool, a hook or a listener whose own nursery fails on the way out
(Trio raises ``[ValueError, Cancelled]``) is still an abort: ``prompt()`` returns normally,
the transcript ends in pi's aborted shape, and the failure is logged once, never raised."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt

from .support import SLEEP, assert_aborted, faux, make_scripted_agent


async def _nursery_failing_on_cancel() -> None:
    async def worker() -> None:
        try:
            await trio.sleep_forever()
        finally:
            raise ValueError("cleanup failed while cancelled")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker)
        await trio.sleep_forever()


@pytest.mark.parametrize("where", ["tool", "before_tool_call", "listener"])
@pytest.mark.parametrize("calls", [1, 2])
async def test_an_abort_through_a_failing_nursery_is_an_abort(
    where: str, calls: int, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    async def tool(tool_call_id: str, params: Any, on_update: Any) -> str:
        if where == "tool":
            await _nursery_failing_on_cancel()
        await trio.sleep(100)
        return "done"

    async def before(context: pt.BeforeToolCallContext) -> None:
        if where == "before_tool_call":
            await _nursery_failing_on_cancel()

    async def listener(event: pt.AgentEvent) -> None:
        if where == "listener" and event.type == "tool_execution_start":
            await _nursery_failing_on_cancel()

    batch = faux.assistant_message([faux.tool_call("t", {}, id=f"c{n}") for n in range(calls)])
    agent, _ = make_scripted_agent(
        [batch, faux.assistant_message("never")],
        (pt.AgentTool("t", "T", "t", {"type": "object"}, tool), SLEEP),
        before_tool_call=before,
    )
    agent.subscribe(listener)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        agent.abort()
    assert_aborted(agent)
    logged = [r for r in caplog.records if "cleanup failed while cancelled" in r.getMessage()]
    assert len(logged) == calls if where == "tool" else len(logged) == 1
    assert "the cancellation goes on" in logged[0].getMessage()
