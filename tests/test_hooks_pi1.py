"""pi 1.x's hooks as additions (issue 16): finish_turn, prepare_request, prepare_next_turn.
With none of them set, runs are pi 0.73.1's (the fixtures); these tests check each hook."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .grammar import assert_event_grammar
from .support import make_agent, make_scripted_agent, record
from .transcript import assert_transcript_valid

SCHEMA = {"type": "object", "properties": {}}


async def _noop(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("ok")])


NOOP = pt.AgentTool("noop", "Noop", "does nothing", SCHEMA, _noop)


def _tool_turn(i: int = 0) -> pt.AssistantMessage:
    return faux.assistant_message([faux.tool_call("noop", {}, id=f"n{i}")])


async def test_finish_turn_end_stops_after_that_turn_end_without_polling() -> None:
    seen: list[tuple[str, int]] = []

    def finish(turn: Any) -> str:
        seen.append((turn.message.stop_reason, len(turn.tool_results)))
        return "end"

    agent, scripted = make_scripted_agent(
        [_tool_turn(), faux.assistant_message("never")], [NOOP], finish_turn=finish
    )
    events = record(agent)
    agent.follow_up("queued")
    await agent.prompt("go")
    assert seen == [("toolUse", 1)]
    assert len(scripted.calls) == 1  # no second request
    assert agent.has_queued_messages()  # "end" does not poll the queues
    assert [e.type for e in events[-2:]] == ["turn_end", "agent_end"]
    assert_event_grammar(events)


async def test_finish_turn_runs_before_turn_end() -> None:
    order: list[str] = []
    agent = make_agent(
        [faux.assistant_message("hi")], [NOOP], finish_turn=lambda turn: order.append("finish")
    )
    agent.subscribe(lambda e: order.append(e.type) if isinstance(e, pt.TurnEnd) else None)
    await agent.prompt("go")
    assert order == ["finish", "turn_end"]


async def test_finish_turn_continue_makes_one_more_request() -> None:
    calls = 0

    def finish(turn: Any) -> str | None:
        nonlocal calls
        calls += 1
        return "continue" if calls == 1 else None

    agent, scripted = make_scripted_agent(
        [faux.assistant_message("first"), faux.assistant_message("second")],
        [NOOP],
        finish_turn=finish,
    )
    events = record(agent)
    await agent.prompt("go")
    assert len(scripted.calls) == 2
    assert sum(isinstance(e, pt.TurnStart) for e in events) == 2
    assert_event_grammar(events)


async def test_finish_turn_continue_adds_nothing_when_a_request_follows_anyway() -> None:
    def finish(turn: Any) -> str | None:
        return "continue" if turn.tool_results else None

    agent, scripted = make_scripted_agent(
        [_tool_turn(), faux.assistant_message("done")], [NOOP], finish_turn=finish
    )
    await agent.prompt("go")
    assert len(scripted.calls) == 2  # the tool turn's own follow-up request, no extra one


async def test_finish_turn_is_called_after_a_failed_response_too() -> None:
    seen: list[str] = []
    agent = make_agent(
        [faux.assistant_message("", stop_reason="error", error_message="boom")],
        [NOOP],
        finish_turn=lambda turn: seen.append(turn.message.stop_reason) or "continue",
    )
    events = record(agent)
    await agent.prompt("go")
    assert seen == ["error"]  # and the error still ends the run
    assert agent.state.error_message == "boom"
    assert_event_grammar(events)


async def test_prepare_request_replaces_that_requests_context_model_and_options() -> None:
    other = attrs.evolve(faux.FauxModel([]).model, id="faux-other")

    def prepare(ctx: pt.PrepareRequestContext) -> pt.RequestUpdate:
        context = attrs.evolve(ctx.context, system_prompt="rewritten")
        return pt.RequestUpdate(
            context=context, model=other, options=attrs.evolve(ctx.options, temperature=0.5)
        )

    agent, scripted = make_scripted_agent(
        [_tool_turn(), faux.assistant_message("done")], [NOOP], prepare_request=prepare
    )
    await agent.prompt("go")
    assert len(scripted.calls) == 2
    for call in scripted.calls:
        assert (call.model.id, call.context.system_prompt, call.options.temperature) == (
            "faux-other",
            "rewritten",
            0.5,
        )
    assert agent.state.system_prompt == ""  # the agent's own state is untouched


async def test_prepare_next_turn_adds_messages_and_switches_the_model_for_later_turns() -> None:
    other = attrs.evolve(faux.FauxModel([]).model, id="faux-next")
    turns: list[int] = []

    def prepare(turn: Any) -> pt.TurnUpdate:
        turns.append(len(turn.tool_results))
        return pt.TurnUpdate(
            messages=[pt.UserMessage([pt.TextContent("a note")])], model=other,
            thinking_level="high",
        )  # fmt: skip

    agent, scripted = make_scripted_agent(
        [_tool_turn(), faux.assistant_message("done")], [NOOP], prepare_next_turn=prepare
    )
    events = record(agent)
    await agent.prompt("go")
    assert turns == [1]  # only when another turn starts: not after the final answer
    first, second = scripted.calls
    assert (first.model.id, second.model.id) == (scripted.model.id, "faux-next")
    assert (first.options.reasoning, second.options.reasoning) == (None, "high")
    texts = [m.content[0].text for m in second.context.messages if isinstance(m, pt.UserMessage)]
    assert texts == ["go", "a note"]  # announced before the request, with its events
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages)


async def test_an_abort_during_finish_turn_closes_the_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def slow_finish(turn: Any) -> None:
        await trio.sleep(10)

    agent = make_agent(
        [_tool_turn(), faux.assistant_message("never")], [NOOP], finish_turn=slow_finish
    )
    events = record(agent)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "go")
        await trio.sleep(1)
        agent.abort()
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages, aborted=True)


async def test_prepare_next_turn_can_replace_the_tools_of_later_requests() -> None:
    async def _later(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent("later ran")])

    later = pt.AgentTool("later", "Later", "added mid-run", SCHEMA, _later)

    def prepare_next_turn(turn: pt.ShouldStopAfterTurnContext) -> pt.TurnUpdate:
        return pt.TurnUpdate(tools=[NOOP, later])

    agent, scripted = make_scripted_agent(
        [_tool_turn(), faux.assistant_message([faux.tool_call("later", {}, id="l")]), "done"],
        [NOOP],
        prepare_next_turn=prepare_next_turn,
    )
    events = record(agent)
    await agent.prompt("go")
    offered = [[tool.name for tool in call.context.tools] for call in scripted.calls]
    assert offered == [["noop"], ["noop", "later"], ["noop", "later"]]
    last_result = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)][-1]
    assert last_result.content == [pt.TextContent("later ran")] and not last_result.is_error
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages)


async def test_turn_update_tools_is_checked_like_agent_state_tools() -> None:
    with pytest.raises(TypeError, match="AgentTool"):
        pt.TurnUpdate(tools=["work"])  # type: ignore[list-item]
