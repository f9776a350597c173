"""A tool or a hook that answers with the wrong type is handled where its own failure would be
(an error result, or the run ended with stop_reason "error"), with a message naming it and what
it should return: never an AttributeError from deep in the loop, a ``prompt()`` that raises,
or a transcript holding what pi's JSON cannot."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from .support import ECHO, calls, make_agent, tool_results

SCHEMA = {"type": "object", "properties": {}}


def _returning(value: Any) -> pt.AgentTool:
    async def execute(tool_call_id: str, params: Any, on_update: Any) -> Any:
        return value

    return pt.AgentTool("odd", "Odd", "returns what it returns", SCHEMA, execute)


async def test_a_result_whose_content_is_one_text_becomes_a_text_block() -> None:
    agent = make_agent(
        [calls(("odd", {})), faux.assistant_message("ok")],
        tools=(_returning(pt.ToolResult("plain text", details={"kept": True})),),  # type: ignore[arg-type]
    )
    await agent.prompt("go")
    (message,) = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert message.content == [pt.TextContent("plain text")] and not message.is_error
    assert message.details == {"kept": True}
    assert pt.to_json(message)["content"] == [{"type": "text", "text": "plain text"}]


async def test_a_result_whose_content_is_a_tuple_of_blocks_is_taken_as_a_list() -> None:
    blocks = (pt.TextContent("a"), pt.TextContent("b"))
    agent = make_agent(
        [calls(("odd", {})), faux.assistant_message("ok")],
        tools=(_returning(pt.ToolResult(blocks)),),  # type: ignore[arg-type]
    )
    await agent.prompt("go")
    (message,) = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert message.content == list(blocks) and not message.is_error


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (["x"], "content[0] is str"),
        ([pt.TextContent("a"), {"type": "text"}], "content[1] is dict"),
        (42, "content is int"),
    ],
)
async def test_a_result_whose_content_is_not_blocks_is_the_call_s_error(
    content: Any, said: str
) -> None:
    agent = make_agent(
        [calls(("odd", {})), faux.assistant_message("ok")],
        tools=(_returning(pt.ToolResult(content)),),
    )
    await agent.prompt("go")
    ((_, text, is_error),) = tool_results(agent.state.messages)
    assert is_error and f"tool returned a ToolResult whose {said}" in text
    assert agent.state.messages[-1].stop_reason == "stop"  # the run went on


async def test_an_after_tool_call_giving_content_that_is_not_blocks_is_the_call_s_error() -> None:
    agent = make_agent(
        [calls(("echo", {"text": "t"})), faux.assistant_message("ok")],
        tools=(ECHO,),
        after_tool_call=lambda ctx: pt.AfterToolCallResult(content=[1, 2]),  # type: ignore[list-item]
    )
    await agent.prompt("go")
    ((_, text, is_error),) = tool_results(agent.state.messages)
    assert is_error and "after_tool_call gave a result whose content[0] is int" in text


@pytest.mark.parametrize(
    ("hook", "expected"),
    [("before_tool_call", "BeforeToolCallResult"), ("after_tool_call", "AfterToolCallResult")],
)
async def test_a_tool_hook_answering_another_type_is_the_call_s_error(
    hook: str, expected: str
) -> None:
    agent = make_agent(
        [calls(("echo", {"text": "t"})), faux.assistant_message("ok")],
        tools=(ECHO,),
        **{hook: lambda ctx: {"block": True}},
    )
    await agent.prompt("go")
    ((_, text, is_error),) = tool_results(agent.state.messages)
    assert is_error and f"{hook} returned dict, expected pt.{expected} or None" in text
    assert agent.state.error_message is None  # the call's error, not the run's


async def test_prepare_next_turn_answering_another_type_ends_the_run_and_prompt_returns() -> None:
    agent = make_agent(
        [calls(("echo", {"text": "t"})), faux.assistant_message("never asked")],
        tools=(ECHO,),
        prepare_next_turn=lambda turn: {"messages": []},
    )
    ends: list[pt.AgentEvent] = []
    agent.subscribe(lambda event: ends.append(event) if event.type == "agent_end" else None)
    await agent.prompt("go")  # returns: the failure is in the transcript
    assert len(ends) == 1 and not agent.state.is_streaming
    expected = "prepare_next_turn returned dict, expected pt.TurnUpdate or None"
    assert expected in (agent.state.error_message or "")


async def test_replacing_the_transcript_during_a_run_is_refused_and_after_it_kept(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent([calls(("sleep", {"s": 1})), faux.assistant_message("done")])
    refused: list[BaseException] = []

    def replace(event: pt.AgentEvent) -> None:
        if event.type == "tool_execution_start":
            try:
                agent.state.messages = [pt.UserMessage("loaded history")]
            except pt.AgentBusyError as exc:
                refused.append(exc)
        elif event.type == "agent_end":  # the run appends no more: replacing is fine
            agent.state.messages = [*agent.state.messages, pt.UserMessage("note")]

    agent.subscribe(replace)
    await agent.prompt("go")
    (error,) = refused
    assert "while a run appends to it" in str(error)
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user"]
