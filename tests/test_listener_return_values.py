"""A listener's return value: an awaitable is awaited, anything else is ignored (as pi's
``await listener(event)`` ignores it): ``lambda e: e.type == "x" and seen.append(e)`` returns
False for most events and must not fail the run."""

from __future__ import annotations

import pytest
import trio

import pi_trio as pt

from .support import make_agent


@pytest.mark.parametrize("listeners", [1, 2])
async def test_a_listener_returning_a_plain_value_does_not_fail_the_run(listeners: int) -> None:
    agent = make_agent([pt.faux.assistant_message("done")], ())
    ends: list[pt.AgentEvent] = []
    awaited: list[str] = []
    agent.subscribe(lambda event: event.type == "agent_end" and ends.append(event))  # type: ignore[arg-type, func-returns-value]
    if listeners == 2:

        async def after(event: pt.AgentEvent) -> None:
            await trio.lowlevel.checkpoint()
            awaited.append(event.type)

        agent.subscribe(lambda event: 7)  # type: ignore[arg-type, return-value]
        agent.subscribe(after)
    with trio.fail_after(5):
        await agent.prompt("go")
    assert agent.state.error_message is None
    assert agent.state.messages[-1].stop_reason == "stop"  # type: ignore[union-attr]
    assert [event.type for event in ends] == ["agent_end"]
    if listeners == 2:  # the listeners after it still had every event, awaited
        assert awaited[0] == "agent_start" and awaited[-1] == "agent_end"


async def test_an_async_function_returned_uncalled_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = make_agent([pt.faux.assistant_message("done")], ())
    done = trio.Event()
    agent.subscribe(lambda event: done.wait)  # type: ignore[arg-type, return-value]
    with caplog.at_level("WARNING", logger="pi_trio.agent"):
        with trio.fail_after(5):
            await agent.prompt("go")
    assert agent.state.error_message is None  # ignored, as pi ignores it
    warnings = [r for r in caplog.records if "without calling it" in r.getMessage()]
    assert warnings and "Event.wait" in warnings[0].getMessage()
    assert "agent_start" in warnings[0].getMessage()
    assert not [r for r in caplog.records if "returned" in r.getMessage() and r not in warnings]


async def test_a_plain_value_returned_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    agent = make_agent([pt.faux.assistant_message("done")], ())
    agent.subscribe(lambda event: event.type == "agent_end")  # type: ignore[arg-type, return-value]
    with caplog.at_level("DEBUG", logger="pi_trio"):
        await agent.prompt("go")
    assert not [r for r in caplog.records if "without calling it" in r.getMessage()]
