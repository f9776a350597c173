"""What the summary request is made of: the older messages as the agent's ``convert_to_llm``
shows them to the model (an application's own messages included), no ``tool_choice`` (it has
no tools: structured output's "required" is not carried over), and ``agent.compact()``'s
arguments checked where it is called."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import pi_trio as pt

faux = pt.faux


@attrs.define
class Note:
    """An application's own message; its converter shows it to the model as a user message."""

    text: str
    role: str = "note"


def shown(messages: list[Any]) -> list[pt.Message]:
    return [pt.UserMessage(f"NOTE: {m.text}") if isinstance(m, Note) else m for m in messages]


def history() -> list[Any]:
    turns: list[Any] = [Note("the customer is on the gold plan")]
    for index in range(8):
        turns += [pt.UserMessage(f"q{index} " + "x" * 1_600), faux.assistant_message(f"a{index}")]
    return turns


async def test_the_summary_sees_the_messages_as_the_model_was_shown_them() -> None:
    model = faux.FauxModel([faux.assistant_message("the summary")])
    agent = pt.Agent(
        pt.AgentState(model=model.model, messages=history()),
        stream_fn=model,
        convert_to_llm=shown,
        compaction=pt.Compaction(keep_recent_tokens=1_000),
    )
    assert await agent.compact() is not None
    [request] = model.calls
    assert "NOTE: the customer is on the gold plan" in request.context.messages[0].content
    assert request.options.tool_choice is None and not request.context.tools


@attrs.frozen
class Answer:
    value: int


async def test_structured_outputs_tool_choice_is_not_sent_with_the_summary() -> None:
    reading_turns = [faux.assistant_message([faux.tool_call("final_result", {"value": 1})])]
    model = faux.FauxModel([faux.assistant_message("the summary"), *reading_turns])
    small = attrs.evolve(model.model, context_window=3_000)
    agent = pt.Agent(
        pt.AgentState(model=small, messages=history()),
        stream_fn=model,
        output_type=Answer,
        compaction=pt.Compaction(reserve_tokens=500, keep_recent_tokens=1_000),
    )
    await agent.prompt("answer")
    summary, answer = model.calls
    assert not summary.context.tools and summary.options.tool_choice is None
    assert answer.options.tool_choice == "required" and agent.state.output == Answer(1)


async def test_compact_checks_its_arguments_where_it_is_called() -> None:
    agent = pt.Agent(pt.AgentState(messages=history()))
    with pytest.raises(TypeError, match="instructions must be a str or None, not 42"):
        await agent.compact(instructions=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model"):  # as prompt() says, no model set
        await agent.compact()
