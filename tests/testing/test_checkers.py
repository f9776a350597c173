"""check_transcript and check_events find each kind of violation (and none in real runs)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.testing import (
    assert_events_valid,
    assert_transcript_valid,
    check_events,
    check_transcript,
)

from .agents import healthy_agent

faux = pt.faux
Events = list[pt.AgentEvent]


def user(text: str = "hi") -> pt.UserMessage:
    return pt.UserMessage([pt.TextContent(text)])


def calls(*ids: str, stop_reason: pt.StopReason | None = None) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.tool_call("work", {}, id=call_id) for call_id in ids], stop_reason=stop_reason
    )


def result(call_id: str, name: str = "work") -> pt.ToolResultMessage:
    return pt.ToolResultMessage(call_id, name, [pt.TextContent("ok")])


def answer(stop_reason: pt.StopReason = "stop") -> pt.AssistantMessage:
    return faux.assistant_message("done", stop_reason=stop_reason)


# --- transcripts -------------------------------------------------------------------------------

VALID = [user(), calls("a", "b"), result("b"), result("a"), answer()]


def test_a_valid_transcript_has_no_problem() -> None:
    assert check_transcript(VALID) == []
    assert check_transcript([*VALID[:-1], answer("aborted")], aborted=True) == []
    # calls of a message cut off by an error or an abort need no result
    assert check_transcript([user(), calls("a", stop_reason="aborted")], aborted=True) == []
    assert check_transcript([user(), calls("a", stop_reason="error"), user(), answer()]) == []


@pytest.mark.parametrize(
    ("messages", "aborted", "expected"),
    [
        (
            [user(), calls("a"), answer()],
            False,
            "message 2 (assistant): tool calls without a result",
        ),
        ([user(), calls("a"), user()], False, "message 2 (user): tool calls without a result"),
        ([user(), calls("a", "b"), result("a")], False, "the end of the transcript: tool calls "),
        ([user(), result("x"), answer()], False, "message 1: orphan tool result for 'x'"),
        (
            [user(), calls("a"), result("a"), result("a")],
            False,
            "a second result for tool call 'a'",
        ),
        ([user(), calls("a"), result("a", name="other")], False, "names tool 'other', the call"),
        ([user(), calls("a", "a"), result("a"), result("a")], False, "'a' used twice"),
        ([user(), answer("halted")], False, "unknown stop reason 'halted'"),  # type: ignore[arg-type]
        ([user(), answer("stop")], True, "last stop reason is 'stop', not 'aborted'"),
        ([user(), calls("a"), result("a")], True, "ends with toolResult, not an assistant"),
        ([], True, "ends with nothing"),
    ],
)
def test_check_transcript_finds(
    messages: list[pt.AgentMessage], aborted: bool, expected: str
) -> None:
    problems = check_transcript(messages, aborted=aborted)
    assert any(expected in problem for problem in problems), problems


def test_may_finish_first_accepts_stop_only_when_said() -> None:
    finished = [user(), answer("stop")]
    assert check_transcript(finished, aborted=True, may_finish_first=True) == []
    assert check_transcript(finished, aborted=True) != []
    assert check_transcript([user(), answer("error")], aborted=True, may_finish_first=True) != []


@attrs.define
class _Note:
    """An application's message type that was never registered with the wire converter."""

    text: str
    role: str = "note"


def test_round_trip_finds_messages_pi_s_json_does_not_give_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert check_transcript(VALID, round_trip=True) == []
    unregistered = [user(), _Note("x"), answer()]
    assert check_transcript(unregistered) == []  # not looked at without round_trip
    [problem] = check_transcript(unregistered, round_trip=True)
    assert problem.startswith("message 1: not readable back from pi's JSON: ")

    reading = pt.wire.from_json

    def lossy(data: object, cls: object) -> object:
        message = reading(data, cls)
        if isinstance(message, pt.UserMessage):
            message.content = [pt.TextContent("changed")]
        return message

    monkeypatch.setattr(pt.wire, "from_json", lossy)
    assert check_transcript(VALID, round_trip=True) == [
        "message 0: changes on a round trip through pi's JSON"
    ]
    with pytest.raises(AssertionError, match="changes on a round trip"):
        assert_transcript_valid(VALID, round_trip=True)


def test_assert_transcript_valid_lists_every_problem() -> None:
    with pytest.raises(AssertionError) as caught:
        assert_transcript_valid([user(), result("x"), calls("a"), answer("stop")], aborted=True)
    text = str(caught.value)
    assert "orphan tool result" in text
    assert "tool calls without a result" in text
    assert "last stop reason is 'stop'" in text


# --- events ------------------------------------------------------------------------------------


async def _recorded_run() -> Events:
    agent = healthy_agent()
    events: Events = []
    agent.subscribe(events.append)
    await agent.prompt("Go.")
    return events


@pytest.fixture
async def events() -> Events:
    recorded = await _recorded_run()
    assert check_events(recorded) == []  # the base of every mutation below is valid
    return recorded


def _index(
    events: Events, kind: type, n: int = 0, where: Callable[..., bool] = lambda e: True
) -> int:
    found = [i for i, e in enumerate(events) if isinstance(e, kind) and where(e)]
    return found[n]


def _is_tool_result(event: pt.AgentEvent) -> bool:
    return isinstance(getattr(event, "message", None), pt.ToolResultMessage)


def _is_user(event: pt.AgentEvent) -> bool:
    return isinstance(getattr(event, "message", None), pt.UserMessage)


def _without(events: Events, index: int) -> Events:
    return events[:index] + events[index + 1 :]


def _with(events: Events, index: int, event: pt.AgentEvent) -> Events:
    return [*events[:index], event, *events[index:]]


def _move(events: Events, source: int, target: int) -> Events:
    moved = events[source]
    rest = _without(events, source)
    return _with(rest, target if target < source else target - 1, moved)


def _mutations() -> dict[str, tuple[Callable[[Events], Events], str]]:
    T = pt  # the event classes
    first_tool_start = lambda e: _index(e, T.ToolExecutionStart)  # noqa: E731
    first_tool_end = lambda e: _index(e, T.ToolExecutionEnd)  # noqa: E731
    first_update = lambda e: _index(e, T.MessageUpdate)  # noqa: E731
    return {
        "empty": (lambda e: [], "no events at all"),
        "no agent_start": (lambda e: e[1:], "event 0 is turn_start, not agent_start"),
        "two agent_start": (lambda e: _with(e, 1, T.AgentStart()), "agent_start sent 2 times"),
        "no agent_end": (lambda e: e[:-1], "agent_end sent 0 times"),
        "agent_end not last": (lambda e: _move(e, len(e) - 1, len(e) - 2), "not agent_end"),
        "agent_end in a turn": (lambda e: _move(e, len(e) - 1, len(e) - 2), "inside an open turn"),
        "two agent_end": (lambda e: [*e, attrs.evolve(e[-1])], "agent_end sent 2 times"),
        "agent_end messages": (
            lambda e: [*e[:-1], T.AgentEnd(e[-1].messages[:-1])],  # type: ignore[attr-defined]
            "not the 11 of the run's message_end events",
        ),
        "outside a turn": (
            lambda e: _with(e, _index(e, T.TurnStart, 1), attrs.evolve(e[_index(e, T.MessageEnd)])),
            "outside any turn",
        ),
        "nested turn": (lambda e: _with(e, 2, T.TurnStart()), "a turn started inside an open turn"),
        "turn ends with a message open": (
            lambda e: _without(e, _index(e, T.MessageEnd, -1)),
            "the turn ended with its assistant message still open",
        ),
        "turn ends with a tool open": (
            lambda e: _move(e, first_tool_end(e), _index(e, T.TurnEnd) + 1),
            "the turn ended with tool executions open",
        ),
        "nested message": (
            lambda e: _with(e, first_update(e), attrs.evolve(e[first_update(e) - 1])),
            "a message started inside an open message",
        ),
        "update outside a message": (
            lambda e: _move(e, first_update(e), _index(e, T.MessageEnd, 1) + 1),
            "an update with no message open",
        ),
        "update on a user message": (
            lambda e: _with(e, _index(e, T.MessageEnd), attrs.evolve(e[first_update(e)])),
            "an update with the user message open",
        ),
        "end without start": (
            lambda e: _without(e, _index(e, T.MessageStart, 1)),
            "a message ended that never started",
        ),
        "role mismatch": (
            lambda e: _without(_without(e, _index(e, T.MessageStart, 1)), _index(e, T.MessageEnd)),
            "the assistant message ended while the user message was open",
        ),
        "result before tool end": (
            lambda e: _move(
                _move(e, _index(e, T.MessageEnd, 0, _is_tool_result), first_tool_start(e) + 1),
                _index(e, T.MessageStart, 0, _is_tool_result),
                first_tool_start(e) + 1,
            ),
            "came before its tool_execution_end",
        ),
        "tool inside a message": (
            lambda e: _move(e, first_tool_start(e), first_tool_start(e) - 1),
            "started inside an open message",
        ),
        "tool started twice": (
            lambda e: _with(e, first_tool_start(e), attrs.evolve(e[first_tool_start(e)])),
            "started twice",
        ),
        "tool update not running": (
            lambda e: _with(
                e,
                first_tool_start(e),
                T.ToolExecutionUpdate("ghost", "work", {}, T.ToolResult([])),
            ),
            "an update for 'ghost', not running",
        ),
        "tool ended twice": (
            lambda e: _with(e, first_tool_end(e), attrs.evolve(e[first_tool_end(e)])),
            "ended twice",
        ),
        "tool never started": (
            lambda e: _with(e, 2, T.ToolExecutionEnd("ghost", "work", T.ToolResult([]), False)),
            "'ghost' ended but never started",
        ),
        "cut off in a turn": (lambda e: e[: first_tool_start(e) + 1], "end inside an open turn"),
        "cut off in a message": (
            lambda e: e[: first_update(e) + 1],
            "the events end with the assistant message still open",
        ),
        "cut off in a tool": (
            lambda e: e[: first_tool_start(e) + 1],
            "tool executions started but never ended",
        ),
        "same event twice": (
            lambda e: _with(e, first_update(e), e[first_update(e)]),
            "the same event object delivered twice",
        ),
    }


MUTATIONS = _mutations()


@pytest.mark.parametrize("name", list(MUTATIONS))
async def test_check_events_finds(
    events: Events, name: str, autojump_clock: trio.testing.MockClock
) -> None:
    mutate, expected = MUTATIONS[name]
    broken = mutate(list(events))
    problems = check_events(broken)
    assert any(expected in problem for problem in problems), problems


async def test_assert_events_valid_lists_every_problem(
    events: Events, autojump_clock: trio.testing.MockClock
) -> None:
    assert_events_valid(events)
    broken = [e for e in events if not isinstance(e, pt.TurnStart | pt.AgentEnd)]
    with pytest.raises(AssertionError) as caught:
        assert_events_valid(broken)
    text = str(caught.value)
    assert "outside any turn" in text and "agent_end sent 0 times" in text
    assert "events: agent_start message_start" in text


async def test_an_aborted_run_has_valid_events_and_transcript(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = healthy_agent()
    events: Events = []
    agent.subscribe(events.append)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "Go.")
        await trio.sleep(1.0)  # inside the first tool batch
        agent.abort()
    assert check_events(events) == []
    assert check_transcript(agent.state.messages, aborted=True) == []
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
