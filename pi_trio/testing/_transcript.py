"""The transcript invariants: what every run must leave behind, aborted or not.

pi's rule (DESIGN.md section 3, BENCHMARKS.md "Transcript valid"): before every model call,
and after every run, each tool call of a completed assistant message has exactly one tool
result, after it and before the next assistant (or user) message; no result answers a call
that is not pending. An assistant message that stopped with "error" or "aborted" was cut off:
its tool calls are never executed and need no result. An aborted run ends with an assistant
message whose stop reason is "aborted".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .._errors import WireFormatError
from ..messages import AgentMessage, AssistantMessage, ToolResultMessage, UserMessage

__all__ = ["STOP_REASONS", "assert_transcript_valid", "check_transcript"]

STOP_REASONS: Final = frozenset({"stop", "length", "toolUse", "error", "aborted"})
_CUT_OFF: Final = ("error", "aborted")


def check_transcript(
    messages: Sequence[AgentMessage],
    *,
    aborted: bool = False,
    may_finish_first: bool = False,
    round_trip: bool = False,
) -> list[str]:
    """What is wrong with a transcript: one line per problem, an empty list when valid.

    Args:
        messages: the transcript (``agent.state.messages``, or a loop context's messages).
        aborted: the run was aborted (``agent.abort()`` or a deadline landed while it ran): the
            transcript must end with an assistant message whose stop reason is "aborted".
        may_finish_first: with ``aborted``, the run may have finished before the abort landed
            (the abort raced the run's end), so a last stop reason of "stop" is accepted too.
        round_trip: also check that each message comes back unchanged from pi's JSON
            (:func:`pt.to_json`, then :func:`pt.from_json`): what a session log, an RPC client
            or pi itself would read. Off by default: it loads the wire converter, and an
            application's own message types must be registered with it
            (:func:`pt.register_message_type`).

    Checks: every stop reason is one of pi's; each tool call of a completed assistant message
    is answered exactly once, by a result naming the same tool, before the next assistant or
    user message; no orphan or duplicate results; no tool-call id used twice in one assistant
    message. (Ids may repeat across turns: some providers and scripted models number calls per
    message, and results are matched to the message right before them.)
    """
    problems: list[str] = []
    pending: dict[str, str] = {}  # call id -> tool name, awaiting a result
    answered: set[str] = set()

    def unanswered(where: str) -> None:
        if pending:
            problems.append(f"{where}: tool calls without a result: {sorted(pending)}")
            pending.clear()

    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            unanswered(f"message {index} (assistant)")
            answered.clear()
            if message.stop_reason not in STOP_REASONS:
                problems.append(f"message {index}: unknown stop reason {message.stop_reason!r}")
            seen_calls: set[str] = set()
            for call in message.tool_calls:
                if call.id in seen_calls:
                    problems.append(f"message {index}: tool call id {call.id!r} used twice")
                seen_calls.add(call.id)
                if message.stop_reason not in _CUT_OFF:
                    pending[call.id] = call.name
        elif isinstance(message, ToolResultMessage):
            call_id = message.tool_call_id
            if call_id in pending:
                name = pending.pop(call_id)
                answered.add(call_id)
                if message.tool_name != name:
                    problems.append(
                        f"message {index}: the result for {call_id!r} names tool "
                        f"{message.tool_name!r}, the call was {name!r}"
                    )
            elif call_id in answered:
                problems.append(f"message {index}: a second result for tool call {call_id!r}")
            else:
                problems.append(
                    f"message {index}: orphan tool result for {call_id!r} (no pending call)"
                )
        elif isinstance(message, UserMessage):
            unanswered(f"message {index} (user)")
    unanswered("the end of the transcript")

    last = messages[-1] if messages else None
    if aborted:
        allowed = ("aborted", "stop") if may_finish_first else ("aborted",)
        if not isinstance(last, AssistantMessage):
            role = getattr(last, "role", None) if last is not None else "nothing"
            problems.append(
                f"the run was aborted but its transcript ends with {role}, "
                f"not an assistant message stopped {' or '.join(allowed)}"
            )
        elif last.stop_reason not in allowed:
            problems.append(
                f"the run was aborted but its last stop reason is {last.stop_reason!r}, "
                f"not {' or '.join(repr(reason) for reason in allowed)}"
            )
    if round_trip:
        problems += _round_trip_problems(messages)
    return problems


def _round_trip_problems(messages: Sequence[AgentMessage]) -> list[str]:
    from ..wire import from_json, to_json  # cattrs: loaded only when a round trip is asked for

    problems: list[str] = []
    for index, message in enumerate(messages):
        try:
            data = to_json(message)
            again = to_json(from_json(data, AgentMessage))
        except WireFormatError as exc:
            problems.append(f"message {index}: not readable back from pi's JSON: {exc}")
            continue
        if again != data:
            problems.append(f"message {index}: changes on a round trip through pi's JSON")
    return problems


def assert_transcript_valid(
    messages: Sequence[AgentMessage],
    *,
    aborted: bool = False,
    may_finish_first: bool = False,
    round_trip: bool = False,
) -> None:
    """:func:`check_transcript`, for tests.

    Raises:
        AssertionError: listing every problem found (one per line).
    """
    problems = check_transcript(
        messages, aborted=aborted, may_finish_first=may_finish_first, round_trip=round_trip
    )
    if problems:
        raise AssertionError("invalid transcript:\n  " + "\n  ".join(problems))
