"""Structured output (DESIGN 9.6): ``pt.Agent(output_type=..., output_retries=...)`` runs until
the model calls the output tool with valid arguments; ``agent.state.output`` is the value.
Each test runs a scripted model and checks the value, the transcript and what was requested."""

from __future__ import annotations

import enum
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .grammar import assert_event_grammar
from .support import ECHO, loop_setup, make_scripted_agent, record
from .transcript import assert_transcript_valid


class Currency(enum.Enum):
    EUR = "EUR"
    USD = "USD"


@attrs.frozen
class Line:
    item: str
    amount: float


@attrs.frozen
class Invoice:
    """An invoice read from the user's text."""

    number: str
    currency: Currency
    lines: tuple[Line, ...]
    tags: frozenset[str] = frozenset()


VALID = {
    "number": "A-17",
    "currency": "EUR",
    "lines": [{"item": "tea", "amount": 3.5}, {"item": "cake", "amount": "4"}],
    "tags": ["food"],
}
INVOICE = Invoice("A-17", Currency.EUR, (Line("tea", 3.5), Line("cake", 4.0)), frozenset({"food"}))
INVALID = {"number": "A-17", "currency": "GBP", "lines": []}

DICT_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}


def answer(arguments: dict[str, Any], call_id: str = "out") -> pt.AssistantMessage:
    return faux.assistant_message([faux.tool_call("final_result", arguments, id=call_id)])


def results(agent: pt.Agent) -> list[pt.ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]


async def test_a_valid_first_answer_ends_the_run_with_the_value() -> None:
    agent, scripted = make_scripted_agent([answer(VALID)], [ECHO], output_type=Invoice)
    events = record(agent)
    await agent.prompt("Tea 3.50, cake 4, invoice A-17 in euros")
    assert agent.state.output == INVOICE
    assert agent.state.error is None and agent.state.error_message is None
    assert len(scripted.calls) == 1
    [result] = results(agent)
    assert not result.is_error
    assert result.details == {"structured_content": pt.output_json(INVOICE)}
    end = next(e for e in events if isinstance(e, pt.ToolExecutionEnd))
    assert end.result.terminate
    assert end.result.structured_content == {
        "number": "A-17",
        "currency": "EUR",
        "lines": [{"item": "tea", "amount": 3.5}, {"item": "cake", "amount": 4.0}],
        "tags": ["food"],
    }
    assert events[-1] == pt.AgentEnd(agent.state.messages)
    assert isinstance(events[-1], pt.AgentEnd) and events[-1].output == INVOICE
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages, round_trip=True)


async def test_every_request_offers_the_output_tool_and_asks_for_a_tool_call() -> None:
    agent, scripted = make_scripted_agent(
        [faux.assistant_message([faux.tool_call("echo", {"text": "hi"})]), answer(VALID)],
        [ECHO],
        output_type=Invoice,
    )
    await agent.prompt("go")
    assert agent.state.output == INVOICE
    for call in scripted.calls:
        assert [tool.name for tool in call.context.tools] == ["echo", "final_result"]
        assert call.options.tool_choice == "required"
        offered = call.context.tools[1]
        assert offered.parameters == pt.json_schema_for(Invoice)
        assert "An invoice read from the user's text." in offered.description
    assert [tool.name for tool in agent.state.tools] == ["echo"]  # the state's list unchanged


async def test_a_tool_choice_the_options_set_is_kept() -> None:
    agent, scripted = make_scripted_agent(
        [answer(VALID)],
        [],
        output_type=Invoice,
        stream_options=pt.StreamOptions(tool_choice={"name": "final_result"}),
    )
    await agent.prompt("go")
    assert scripted.calls[0].options.tool_choice == {"name": "final_result"}


async def test_invalid_arguments_go_back_as_pi_s_validation_error_then_a_valid_call_wins() -> None:
    agent, scripted = make_scripted_agent(
        [answer(INVALID, "bad"), answer(VALID, "good")], [], output_type=Invoice
    )
    await agent.prompt("go")
    assert agent.state.output == INVOICE
    bad, good = results(agent)
    assert bad.is_error and not good.is_error
    text = bad.content[0].text  # type: ignore[union-attr]
    assert text.startswith('Validation failed for tool "final_result":\n')
    assert "currency" in text and '"GBP"' in text
    # the model saw the error before its second try
    second = scripted.calls[1].context.messages
    assert isinstance(second[-1], pt.ToolResultMessage) and second[-1].is_error
    assert agent.state.error_message is None
    assert_transcript_valid(agent.state.messages)


async def test_always_invalid_ends_with_an_error_message_naming_the_last_validation_error() -> None:
    agent, scripted = make_scripted_agent(
        [answer(INVALID, f"c{i}") for i in range(3)] + [answer(VALID)],
        [],
        output_type=Invoice,
        output_retries=2,
    )
    events = record(agent)
    await agent.prompt("go")
    assert len(scripted.calls) == 3  # the first try and two retries; never a fourth request
    assert agent.state.output is None
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage)
    assert last.stop_reason == "error" and last.content == []
    last_error = results(agent)[-1].content[0].text  # type: ignore[union-attr]
    assert last.error_message == (
        'Structured output failed after 3 attempts: the last call of "final_result" was '
        f"invalid: {last_error}"
    )
    assert agent.state.error_message == last.error_message
    error = agent.state.error
    assert isinstance(error, pt.OutputError)
    assert (error.tool_name, error.attempts, error.last_error) == ("final_result", 3, last_error)
    # pi's shape of a failed last turn: its own turn_start, the message, turn_end, agent_end
    assert [e.type for e in events[-5:]] == [
        "turn_start", "message_start", "message_end", "turn_end", "agent_end"
    ]  # fmt: skip
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages, round_trip=True)


async def test_no_retries_ends_the_run_at_the_first_failure() -> None:
    agent, scripted = make_scripted_agent(
        [answer(INVALID), answer(VALID)], [], output_type=Invoice, output_retries=0
    )
    await agent.prompt("go")
    assert len(scripted.calls) == 1
    assert agent.state.error_message is not None
    assert agent.state.error_message.startswith("Structured output failed after 1 attempt: ")


async def test_a_json_schema_dict_gives_the_validated_dict() -> None:
    agent, scripted = make_scripted_agent(
        [answer({"city": "Oslo"}), answer({"city": "Oslo", "celsius": "-3"})],
        [],
        output_type=DICT_SCHEMA,
    )
    await agent.prompt("weather?")
    assert agent.state.output == {"city": "Oslo", "celsius": -3}  # coerced, as pi does
    assert scripted.calls[0].context.tools[0].parameters == DICT_SCHEMA
    first = results(agent)[0]
    assert first.is_error and "celsius" in first.content[0].text  # type: ignore[union-attr]


async def test_a_text_answer_is_nudged_to_call_the_output_tool() -> None:
    agent, scripted = make_scripted_agent(
        [faux.assistant_message("It is A-17, in euros."), answer(VALID)],
        [],
        output_type=Invoice,
    )
    events = record(agent)
    await agent.prompt("go")
    assert agent.state.output == INVOICE
    nudge = agent.state.messages[2]
    assert isinstance(nudge, pt.UserMessage)
    assert nudge.content == (
        'Give your final answer by calling the tool "final_result" with it as the arguments: '
        "a text answer is not accepted."
    )
    assert scripted.calls[1].context.messages[-1] == nudge  # the model saw it
    assert [e.type for e in events].count("turn_start") == 2
    assert_event_grammar(events)
    assert_transcript_valid(agent.state.messages)


async def test_text_answers_count_against_the_retries() -> None:
    agent, scripted = make_scripted_agent(
        [faux.assistant_message("no"), faux.assistant_message("still no"), answer(VALID)],
        [],
        output_type=Invoice,
        output_retries=1,
    )
    await agent.prompt("go")
    assert len(scripted.calls) == 2
    assert agent.state.output is None
    assert agent.state.error_message == (
        "Structured output failed after 2 attempts: the model answered in text instead of "
        'calling the tool "final_result"'
    )
    assert isinstance(agent.state.error, pt.OutputError)
    assert agent.state.error.last_error is None
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "user", "assistant", "assistant"]
    assert_transcript_valid(agent.state.messages)


async def test_other_tools_do_not_count_and_the_output_ends_the_batch_s_run() -> None:
    # two echo turns are not failures (output_retries=0 allows none); a batch with the
    # output and another tool ends the run (the echo runs, its result is kept)
    agent, scripted = make_scripted_agent(
        [
            faux.assistant_message([faux.tool_call("echo", {"text": "1"})]),
            faux.assistant_message([faux.tool_call("echo", {"text": "2"})]),
            faux.assistant_message(
                [faux.tool_call("echo", {"text": "3"}), faux.tool_call("final_result", VALID)]
            ),
            faux.assistant_message("never asked"),
        ],
        [ECHO],
        output_type=Invoice,
        output_retries=0,
    )
    await agent.prompt("go")
    assert len(scripted.calls) == 3
    assert agent.state.output == INVOICE
    assert [r.tool_name for r in results(agent)] == ["echo", "echo", "echo", "final_result"]


async def test_the_output_is_reset_at_the_start_of_each_run() -> None:
    seen: list[Any] = []
    agent, _ = make_scripted_agent(
        [answer(VALID), faux.assistant_message("no")], [], output_type=Invoice, output_retries=0
    )
    await agent.prompt("first")
    assert agent.state.output == INVOICE
    agent.subscribe(lambda event: seen.append(agent.state.output))
    await agent.prompt("second")
    assert seen[0] is None  # agent_start: reset already
    assert agent.state.output is None
    agent.reset()
    assert agent.state.output is None


async def test_an_agent_without_output_type_offers_nothing_and_has_no_output() -> None:
    agent, scripted = make_scripted_agent([faux.assistant_message("hi")], [ECHO])
    await agent.prompt("go")
    assert [tool.name for tool in scripted.calls[0].context.tools] == ["echo"]
    assert scripted.calls[0].options.tool_choice is None
    assert agent.state.output is None


async def test_an_abort_after_the_answer_keeps_the_output() -> None:
    agent, _ = make_scripted_agent([answer(VALID)], [], output_type=Invoice)

    async def abort_at_turn_end(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.TurnEnd):
            agent.abort()
            await trio.sleep_forever()

    agent.subscribe(abort_at_turn_end)
    await agent.prompt("go")
    assert agent.state.output == INVOICE  # the run had its answer when the abort came


async def test_an_abort_before_the_answer_leaves_none() -> None:
    agent, _ = make_scripted_agent(
        [faux.assistant_message("thinking..."), answer(VALID)], [], output_type=Invoice
    )

    def abort_on_the_nudge(event: pt.AgentEvent) -> None:
        message = event.message if isinstance(event, pt.MessageEnd) else None
        if isinstance(message, pt.UserMessage) and "final_result" in str(message.content):
            agent.abort()

    agent.subscribe(abort_on_the_nudge)
    await agent.prompt("go")
    assert agent.state.output is None
    assert_transcript_valid(agent.state.messages, aborted=True)


async def test_the_stateless_loop_takes_an_output_tool_and_reports_the_value() -> None:
    tool = pt.output_tool(Invoice, name="submit", description="Submit the invoice.")
    assert tool.description == "Submit the invoice."
    context, config, sink, scripted = loop_setup(
        [faux.assistant_message([faux.tool_call("submit", INVALID)]),
         faux.assistant_message([faux.tool_call("submit", VALID)])],
        output_tool=tool,
        output_retries=1,
    )  # fmt: skip
    await pt.run_agent_loop([pt.UserMessage("go")], context, config, sink)
    end = sink.events[-1]
    assert isinstance(end, pt.AgentEnd) and end.output == INVOICE
    assert scripted.calls[0].options.tool_choice == "required"
    assert "submit" in [t.name for t in scripted.calls[0].context.tools]


async def test_output_json_round_trips_through_the_tool_s_validator() -> None:
    data = pt.output_json(INVOICE)
    assert json.loads(json.dumps(data)) == data  # plain JSON: lists for the set and the tuple
    assert pt.output_tool(Invoice).validate(data) == INVOICE
    assert pt.output_json({"a": 1}) == {"a": 1}


async def test_a_tool_named_like_the_output_tool_is_refused() -> None:
    clash = attrs.evolve(ECHO, name="final_result")
    agent, _ = make_scripted_agent([answer(VALID)], [clash], output_type=Invoice)
    with pytest.raises(ValueError, match='a tool is named "final_result"'):
        await agent.prompt("go")
    assert agent.state.messages == []


def test_a_bad_output_type_raises_where_it_is_set() -> None:
    with pytest.raises(TypeError, match="output_type must be an attrs class or a JSON-schema"):
        pt.Agent(output_type=dict)
    with pytest.raises(TypeError, match="got a list"):
        pt.Agent(output_type=[])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must describe an object"):
        pt.Agent(output_type={"type": "array"})
    with pytest.raises(ValueError, match="invalid tool parameters schema"):
        pt.Agent(output_type={"type": "object", "properties": {"x": {"type": 3}}})
    agent = pt.Agent()
    with pytest.raises(ValueError, match="output_retries must be >= 0"):
        agent.output_retries = -1
    with pytest.raises(TypeError, match="output_retries must be an int"):
        agent.output_retries = 1.5  # type: ignore[assignment]
    agent.output_type = Invoice
    assert agent.settings.output_tool is not None
    assert agent.settings.output_tool is agent.settings.output_tool  # made once per record
    assert agent.settings.output_tool.name == "final_result"
    with pytest.raises(TypeError):
        agent.output_type = 3  # type: ignore[assignment]
    assert agent.output_type is Invoice  # the refused value changed nothing


async def test_a_follow_up_after_an_answer_gets_its_own_retries() -> None:
    agent, scripted = make_scripted_agent(
        [answer(INVALID, "a"), answer(VALID, "b"), answer(INVALID, "c"), answer(VALID, "d")],
        [],
        output_type=Invoice,
        output_retries=1,
    )
    agent.follow_up("and once more")
    await agent.prompt("go")
    assert len(scripted.calls) == 4
    assert agent.state.output == INVOICE
    assert agent.state.error_message is None


async def test_the_docs_example_runs_and_retries_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PI_TRIO_MODEL", raising=False)
    path = Path(__file__).parents[1] / "docs" / "examples" / "structured_output.py"
    spec = importlib.util.spec_from_file_location("structured_output_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    # registered: its annotations are resolved in its module, as when it runs as __main__
    monkeypatch.setitem(sys.modules, spec.name, example)
    spec.loader.exec_module(example)
    agent = example.make_agent()
    await agent.prompt(example.EMAIL)
    invoice = agent.state.output
    assert isinstance(invoice, example.Invoice)
    assert [line.amount for line in invoice.lines] == [1200.0, 80.0]
    first_result = next(m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage))
    assert first_result.is_error  # "twelve hundred" went back as a validation error
    assert await example.main() == invoice


async def test_a_hook_that_strips_the_value_makes_the_call_a_failed_attempt() -> None:
    def strip(ctx: pt.AfterToolCallContext) -> pt.AfterToolCallResult:
        return pt.AfterToolCallResult(details={"redacted": True})

    agent, _ = make_scripted_agent(
        [answer(VALID)], [], output_type=Invoice, output_retries=0, after_tool_call=strip
    )
    await agent.prompt("go")
    assert agent.state.output is None
    assert agent.state.error_message is not None
    assert agent.state.error_message.endswith(
        'the last call of "final_result" was invalid: its result holds no value '
        "(an after_tool_call hook replaced its details?)"
    )


def test_the_loop_config_refuses_an_output_type_where_it_wants_the_tool() -> None:
    model = pt.get_model("faux", "faux-1")
    with pytest.raises(TypeError, match=r"output_tool must be a pt.AgentTool \(pt.output_tool"):
        pt.AgentLoopConfig(model, output_tool=Invoice)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="output_retries must be >= 0"):
        pt.AgentLoopConfig(model, output_tool=pt.output_tool(Invoice), output_retries=-1)


@attrs.frozen
class Tagged:
    labels: frozenset[str]
    counts: set[int] = attrs.field(factory=set)
    mixed: frozenset[Any] = frozenset()
    currencies: frozenset[Currency] = frozenset()


def test_a_set_s_json_is_sorted_so_every_process_writes_the_same() -> None:
    # the iteration order of a set of strings changes with the hash seed, from process to
    # process: the log and a prompt cache need one JSON per value
    names = [f"label-{i}" for i in range(40)]
    value = Tagged(
        frozenset(reversed(names)), {30, 4, 17}, frozenset({1, "a"}), frozenset(Currency)
    )
    data = pt.output_json(value)
    assert data["labels"] == sorted(names)
    assert data["counts"] == [4, 17, 30]
    assert data["mixed"] == ["a", 1]  # items that do not sort: by their JSON text
    assert data["currencies"] == ["EUR", "USD"]  # by their values


async def test_a_tool_named_like_the_output_tool_is_refused_with_advice_an_agent_can_follow() -> (
    None
):
    async def other(tool_call_id: str, params: object, on_update: object) -> str:
        return "x"

    clash = pt.AgentTool("final_result", "x", "x", {"type": "object"}, other)
    model = faux.FauxModel([faux.assistant_message("hi")])

    @attrs.frozen
    class Reply:
        text: str

    agent = pt.Agent(
        pt.AgentState(model=model.model, tools=[clash]), stream_fn=model, output_type=Reply
    )
    with pytest.raises(ValueError, match='a tool is named "final_result"') as caught:
        await agent.prompt("go")
    assert "rename that tool" in str(caught.value)  # what pt.Agent(output_type=...) can do
