"""A durable session keeps a run's structured output: the value is in the log (the output
tool's result, its ``details``) and ``agent.state.output`` comes back on resume, rebuilt as
the output class; a run that failed its output comes back with none."""

from __future__ import annotations

from typing import Any

import attrs

import pi_trio as pt
from pi_trio.providers import faux


@attrs.frozen
class Ticket:
    title: str
    priority: int
    labels: frozenset[str] = frozenset()


def answer(arguments: dict[str, Any]) -> pt.AssistantMessage:
    return faux.assistant_message([faux.tool_call("final_result", arguments, id="out")])


async def test_the_output_comes_back_on_resume(store_url: str) -> None:
    scripted = faux.FauxModel(
        [answer({"title": "Printer on fire", "priority": "1", "labels": ["hw", "urgent"]})]
    )
    state = pt.AgentState(model=scripted.model)
    options: dict[str, Any] = {"stream_fn": scripted, "output_type": Ticket}
    async with (
        pt.open_session_store(store_url) as store,
        store.open_agent("t-1", initial_state=state, **options) as agent,
    ):
        await agent.prompt("The printer is on fire!")
        live = agent.state.output
    assert live == Ticket("Printer on fire", 1, frozenset({"hw", "urgent"}))
    async with pt.open_session_store(store_url) as store:
        entries = await store.load("t-1")
        logged = [e.data for e in entries if e.kind == "tool_result"]
        assert logged[-1]["details"] == {"structured_content": pt.output_json(live)}
        async with store.open_agent("t-1", initial_state=state, **options) as resumed:
            assert resumed.state.output == live
            assert isinstance(resumed.state.output, Ticket)
        async with store.open_agent("t-1", initial_state=state, stream_fn=scripted) as plain:
            assert plain.state.output is None  # no output_type: nothing to read it as


async def test_a_failed_output_comes_back_as_none(store_url: str) -> None:
    scripted = faux.FauxModel(
        [answer({"title": "x", "priority": 1}), answer({"title": "no priority"})]
    )
    state = pt.AgentState(model=scripted.model)
    options: dict[str, Any] = {"stream_fn": scripted, "output_type": Ticket, "output_retries": 0}
    async with (
        pt.open_session_store(store_url) as store,
        store.open_agent("t-2", initial_state=state, **options) as agent,
    ):
        await agent.prompt("first")
        assert agent.state.output == Ticket("x", 1)
        await agent.prompt("second")
        assert agent.state.output is None
    async with (
        pt.open_session_store(store_url) as store,
        store.open_agent("t-2", initial_state=state, **options) as resumed,
    ):
        assert resumed.state.output is None  # the last run's, not the first one's
        last = resumed.state.messages[-1]
        assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"
        assert last.error_message is not None
        assert last.error_message.startswith("Structured output failed after 1 attempt")
