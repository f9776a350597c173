"""Reading a session back from its log, and repairing an interrupted tail (never truncating).

:func:`restore` folds the entries into what an agent needs (transcript, settings, both queues,
whether a run was open, the tool calls with a logged intent or result). :func:`repair_transcript`
gives every tool call without a result a synthetic error result that says why, in words a model
understands, with ``details={"interrupted": "not_started" | "outcome_unknown"}``; an open run is
closed in pi's aborted shape: an assistant message with stop_reason "aborted".
"""

from __future__ import annotations

import gc
from collections.abc import Container, Iterable, Sequence
from typing import Any, Final, Literal

import attrs

from ..coding_messages import CompactionSummary
from ..messages import (
    AgentMessage,
    AssistantMessage,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    now_ms,
)
from ..models import Model
from ..tools import ToolDecision
from ..wire import from_json
from ._backend import StoredRow
from ._entries import (
    QueueName,
    check_row,
    entry_error,
    parse_all,
    read_message,
    read_messages,
)

__all__ = [
    "NOT_STARTED_TEXT",
    "OUTCOME_UNKNOWN_TEXT",
    "PROCESS_STOPPED_TEXT",
    "Gap",
    "SessionImage",
    "find_gaps",
    "interrupted_result",
    "logged_result",
    "needs_closing",
    "repair_transcript",
    "restore",
    "stopped_message",
    "waiting_calls",
]

Interrupted = Literal["not_started", "outcome_unknown"]

NOT_STARTED_TEXT: Final = (
    'Tool call "{name}" was not run: the agent stopped before executing it, so it had no '
    "effect. Call the tool again if it is still needed."
)
OUTCOME_UNKNOWN_TEXT: Final = (
    'Tool call "{name}" was interrupted: the agent stopped while the tool was running, so its '
    "result was lost and it may or may not have taken effect. Check before calling it again."
)
PROCESS_STOPPED_TEXT: Final = (
    "This run did not reach its end in the session log: its process stopped (a crash, a kill) "
    "or lost its connection to the session store first; the session was resumed from its log"
)


@attrs.define
class Gap:
    """A tool call without a result: its result belongs at ``index`` of the transcript."""

    index: int
    assistant: AssistantMessage
    call: ToolCall


def _failed(message: AssistantMessage) -> bool:
    return message.stop_reason == "error" or message.stop_reason == "aborted"


def find_gaps(messages: Sequence[AgentMessage]) -> list[Gap]:
    """Every tool call whose result is missing from the block of tool results right after its
    assistant message. Failed ("error"/"aborted") assistant messages are skipped: pi never runs
    their calls and drops those messages from what a model is sent."""
    gaps: list[Gap] = []
    count = len(messages)
    index = 0
    while index < count:
        message = messages[index]
        index += 1
        if not isinstance(message, AssistantMessage) or _failed(message):
            continue
        calls = message.tool_calls
        if not calls:
            continue
        answered = set()
        while index < count and isinstance(messages[index], ToolResultMessage):
            answered.add(messages[index].tool_call_id)  # type: ignore[union-attr]
            index += 1
        for call in calls:
            if call.id not in answered:
                gaps.append(Gap(index, message, call))
    return gaps


def interrupted_result(
    call: ToolCall, why: Interrupted, timestamp: int | None = None
) -> ToolResultMessage:
    """The synthetic error result of an interrupted call."""
    text = NOT_STARTED_TEXT if why == "not_started" else OUTCOME_UNKNOWN_TEXT
    result = ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(text.format(name=call.name))],
        details={"interrupted": why},
        is_error=True,
    )
    if timestamp is not None:
        result.timestamp = timestamp
    return result


def fill(
    messages: Sequence[AgentMessage], fills: Sequence[tuple[int, AgentMessage]]
) -> list[AgentMessage]:
    """``messages`` with each ``(index, message)`` inserted before the original ``index``."""
    out: list[AgentMessage] = []
    position = 0
    for index, message in sorted(fills, key=lambda item: item[0]):
        out.extend(messages[position:index])
        position = max(position, index)
        out.append(message)
    out.extend(messages[position:])
    return out


def needs_closing(messages: Sequence[AgentMessage]) -> bool:
    """Would an interrupted run ending here need pi's aborted message? Not when its last word is
    a complete answer (the run was ending anyway) or already a failed message."""
    if not messages:
        return False
    last = messages[-1]
    if isinstance(last, AssistantMessage):
        return not _failed(last) and bool(last.tool_calls)
    return True


def stopped_message(model: Model | None, messages: Sequence[AgentMessage]) -> AssistantMessage:
    """pi's aborted shape for a run that a stopped process left open."""
    api, provider, model_id = "unknown", "unknown", "unknown"
    if model is not None:
        api, provider, model_id = model.api, model.provider, model.id
    else:
        for message in reversed(messages):
            if isinstance(message, AssistantMessage):
                api, provider, model_id = message.api, message.provider, message.model
                break
    return AssistantMessage(
        content=[],
        api=api,
        provider=provider,
        model=model_id,
        stop_reason="aborted",
        error_message=PROCESS_STOPPED_TEXT,
    )


def repair_transcript(
    messages: Iterable[AgentMessage],
    *,
    started: Container[str] | None = None,
    close_run: bool = False,
    model: Model | None = None,
) -> list[AgentMessage]:
    """A copy of ``messages`` in which every tool call has a result; nothing is removed.

    A call without one gets an error result right after its assistant message's results:
    ``details={"interrupted": "outcome_unknown"}`` when it may have run, or
    ``{"interrupted": "not_started"}`` when ``started`` (the ids of calls whose execution had
    begun, e.g. from a session log's intents) shows it had not. Without ``started`` nothing is
    known, so every such call is "outcome_unknown" (e.g. a pi JSON transcript with orphaned tool
    calls). ``close_run=True`` also closes an interrupted run in pi's aborted shape (an assistant
    message, stop_reason "aborted", naming ``model`` or the last assistant's model).

    Args:
        messages: any transcript (pi's JSON goes through ``pt.from_json(item, pt.AgentMessage)``).
        started: ids of tool calls that may have executed.
        close_run: append the aborted message when the transcript ends mid-run.
        model: the model the aborted message names.
    """
    items = list(messages)
    fills: list[tuple[int, AgentMessage]] = []
    for gap in find_gaps(items):
        why: Interrupted = (
            "outcome_unknown" if started is None or gap.call.id in started else "not_started"
        )
        fills.append((gap.index, interrupted_result(gap.call, why)))
    repaired = fill(items, fills) if fills else items
    if close_run and needs_closing(repaired):
        repaired.append(stopped_message(model, repaired))
    return repaired


# --- folding a log -----------------------------------------------------------------------------


@attrs.define
class SessionImage:
    """A session as its log describes it."""

    session_id: str
    messages: list[AgentMessage] = attrs.field(factory=list)
    settings: dict[str, Any] | None = None
    queued: dict[int, tuple[QueueName, AgentMessage]] = attrs.field(factory=dict)
    """Messages still queued, by the seq of their ``queued`` entry (in order)."""
    open_run: bool = False
    intents: set[str] = attrs.field(factory=set)
    results: dict[str, tuple[int, dict[str, Any], int]] = attrs.field(factory=dict)
    """Logged tool results by call id: (seq, data, time)."""
    approvals: set[str] = attrs.field(factory=set)
    """Ids of the tool calls that were asked for a person's decision (``approval`` entries)."""
    decisions: dict[str, ToolDecision] = attrs.field(factory=dict)
    """The decisions logged about them, by call id."""
    last_seq: int = 0


def waiting_calls(image: SessionImage, messages: Sequence[AgentMessage]) -> list[ToolCall]:
    """The calls of ``messages``' open batch (its last assistant message's calls with no result
    after it, and none logged) that were asked for a decision: they still wait. A call with a
    logged intent was decided and began to run (a crash cut it off): it waits no more, and
    repair treats it as any interrupted call (an approved ``replay="never"`` call never runs
    twice)."""
    if not image.approvals:
        return []
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
            continue
        if not isinstance(message, AssistantMessage) or _failed(message):
            return []
        return [
            call
            for call in message.tool_calls
            if call.id in image.approvals
            and call.id not in answered
            and call.id not in image.results
            and call.id not in image.intents
        ]
    return []


def compacted(
    session_id: str, seq: int, messages: list[AgentMessage], data: dict[str, Any]
) -> list[AgentMessage]:
    """The transcript a ``compaction`` entry made of ``messages``: its summary, the system
    messages it kept from before the cut (``systemKept``, indexes), then the kept messages.

    Raises:
        pt.SessionLogError: the entry's fields are missing, of the wrong type, or name
            messages the transcript does not have.
    """
    first, count = data["firstKept"], data["keptCount"]
    numbers = (first, count, data["tokensBefore"], data["timestamp"])
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        raise entry_error(session_id, seq, "a compaction entry whose counts are not counts")
    if not isinstance(data["summary"], str) or first + count > len(messages):
        raise entry_error(
            session_id,
            seq,
            f"a compaction entry that keeps messages {first}..{first + count - 1} of "
            f"{len(messages)}, or has no summary text",
        )
    system = data.get("systemKept", [])
    if not isinstance(system, list) or not all(
        type(i) is int and 0 <= i < first and type(messages[i]) is SystemMessage for i in system
    ):
        raise entry_error(
            session_id,
            seq,
            "a compaction entry whose systemKept is not a list of system messages before firstKept",
        )
    summary = CompactionSummary(data["summary"], data["tokensBefore"], data["timestamp"])
    return [summary, *(messages[i] for i in system), *messages[first : first + count]]


def decision_of(data: dict[str, Any]) -> ToolDecision:
    """A ``decision`` entry's (or inbox row's) decision.

    Raises:
        KeyError: a field is missing. TypeError: a field has the wrong type.
    """
    return ToolDecision(data["approved"], data.get("reason", ""))


def restore(session_id: str, rows: Iterable[StoredRow]) -> SessionImage:
    """Fold a session's entries into a :class:`SessionImage`.

    It builds thousands of objects that all stay alive, which makes the cyclic garbage
    collector run over and over for nothing (a third of the time for a 1,000-turn session,
    measured); it is paused for this synchronous step and restored after.

    Raises:
        pt.SessionLogError: an entry is corrupt, of an unknown kind, or of a newer version.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _restore(session_id, rows)
    finally:
        if paused:
            gc.enable()


def _restore(session_id: str, rows: Iterable[StoredRow]) -> SessionImage:
    image = SessionImage(session_id)
    messages = image.messages
    queued = image.queued
    rows = list(rows)
    expected = None
    for seq, kind, _text, _when, _epoch, version in rows:
        check_row(session_id, seq, kind, version)
        if expected is not None and seq != expected:
            raise entry_error(session_id, seq, f"seq {seq} follows {expected - 1} (a gap)")
        expected = seq + 1
    for (seq, kind, _text, when, _epoch, _version), data in zip(
        rows, parse_all(session_id, rows), strict=True
    ):
        try:
            if kind == "message":
                message = read_message(session_id, seq, data)
                messages.append(message)
                if type(message) is AssistantMessage:
                    _forget_earlier_calls(image, message)
            elif kind == "tool_result":
                image.results[data["toolCallId"]] = (seq, data, when)
            elif kind == "tool_intent":
                image.intents.add(data["toolCallId"])
            elif kind == "approval":
                image.approvals.add(data["toolCallId"])
            elif kind == "decision" and not data.get("ignored"):
                image.decisions[data["toolCallId"]] = decision_of(data)
            elif kind == "queued":
                queued[seq] = (data["queue"], read_message(session_id, seq, data["message"]))
            elif kind == "drained":
                queued.pop(data["ref"], None)
            elif kind == "cleared":
                name = data["queue"]
                for ref in [ref for ref, (queue, _) in queued.items() if queue == name]:
                    del queued[ref]
            elif kind == "run_start":
                image.open_run = True
            elif kind == "run_end":
                image.open_run = False
            elif kind == "state":
                image.settings = data
            elif kind == "transcript":
                messages[:] = read_messages(session_id, seq, data["messages"])
            elif kind == "compaction":
                messages[:] = compacted(session_id, seq, messages, data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise entry_error(session_id, seq, f"a {kind} entry without {exc}") from None
        image.last_seq = seq
    return image


def _forget_earlier_calls(image: SessionImage, message: AssistantMessage) -> None:
    """A call's intent, approval, decision and result entries come after the message that
    made the call: those logged before ``message`` belong to an earlier call of the same id
    (models that number their calls per turn, ``call_0``, reuse ids), never to its calls."""
    for block in message.content:
        if type(block) is ToolCall:
            call_id = block.id
            image.intents.discard(call_id)
            image.approvals.discard(call_id)
            image.decisions.pop(call_id, None)
            image.results.pop(call_id, None)


def logged_result(session_id: str, seq: int, data: dict[str, Any], when: int) -> ToolResultMessage:
    """The result message of a tool whose result was logged (its write-back was not)."""
    try:
        return from_json(
            {
                "role": "toolResult",
                "toolCallId": data["toolCallId"],
                "toolName": data["toolName"],
                "content": data["content"],
                "details": data.get("details"),
                "isError": data["isError"],
                "timestamp": when or now_ms(),
            },
            ToolResultMessage,
        )
    except Exception as exc:
        raise entry_error(session_id, seq, f"unreadable tool_result entry ({exc})") from None
