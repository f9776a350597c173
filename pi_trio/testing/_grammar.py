"""The event grammar: the shape of one run's events as one subscriber receives them.

pi's order (DESIGN.md section 3): ``agent_start``; per turn ``turn_start``, each message as
``message_start``, ``message_update``* (assistant messages only), ``message_end``, tool calls as
``tool_execution_start``, ``tool_execution_update``*, ``tool_execution_end`` (or, for a call
that waits for a person's decision, ``tool_approval_request``: its end comes in a later run,
or in this one's abort), then ``turn_end``; ``agent_end`` last, carrying the run's messages.
An aborted run closes with the same shape (section 4), so the grammar holds for every run,
aborted or not.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    BudgetReached,
    CompactionEnd,
    CompactionStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    QueueUpdate,
    ToolApprovalRequest,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from ..messages import AgentMessage, AssistantMessage, ToolResultMessage

__all__ = ["assert_events_valid", "check_events"]


def _same(a: Sequence[AgentMessage], b: Sequence[AgentMessage]) -> bool:
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


def check_events(events: Sequence[AgentEvent | QueueUpdate | BudgetReached]) -> list[str]:
    """What is wrong with one run's events as one subscriber saw them (empty when valid).

    Args:
        events: the events of one run, in delivery order (a listener's record, or what an
            ``agent.events()`` channel gave; dropped ``message_update`` events are fine, and
            ``queue_update`` notices, which are not run events, are skipped).

    Checks: ``agent_start`` first and once; exactly one ``agent_end``, last, whose messages are
    the messages of the run's ``message_end`` events; every other event inside a turn; turns,
    messages and tool executions opened and closed in pairs (tool executions by id), never
    nested where pi does not nest them; updates only inside an open assistant message or tool
    execution; a tool-result message only after its tool execution ended; every
    ``compaction_start`` closed by a ``compaction_end`` in the same turn; no event object
    delivered twice.
    """
    problems: list[str] = []
    events = [event for event in events if not isinstance(event, QueueUpdate | BudgetReached)]
    if not events:
        return ["no events at all (agent_start and agent_end are always sent)"]
    if not isinstance(events[0], AgentStart):
        problems.append(f"event 0 is {events[0].type}, not agent_start")
    starts = sum(isinstance(event, AgentStart) for event in events)
    if starts != 1:
        problems.append(f"agent_start sent {starts} times, not once")
    ends = [i for i, event in enumerate(events) if isinstance(event, AgentEnd)]
    if len(ends) != 1:
        problems.append(f"agent_end sent {len(ends)} times, not once")
    if not isinstance(events[-1], AgentEnd):
        problems.append(f"the last event is {events[-1].type}, not agent_end")

    in_turn = compacting = False
    open_message: AgentMessage | None = None
    running: set[str] = set()
    waiting: set[str] = set()  # a tool_approval_request stands for their end in this run
    finished: set[str] = set()
    ended_messages: list[AgentMessage] = []
    seen: set[int] = set()
    for i, event in enumerate(events):
        where = f"event {i} ({event.type})"
        if id(event) in seen:
            problems.append(f"{where}: the same event object delivered twice")
        seen.add(id(event))
        if isinstance(event, AgentStart):
            continue
        if isinstance(event, AgentEnd):
            if in_turn:
                problems.append(f"{where}: sent inside an open turn")
            if not _same(event.messages, ended_messages):
                problems.append(
                    f"{where}: carries {len(event.messages)} messages, not the "
                    f"{len(ended_messages)} of the run's message_end events"
                )
            continue
        if isinstance(event, TurnStart):
            if in_turn:
                problems.append(f"{where}: a turn started inside an open turn")
            in_turn = True
            continue
        if not in_turn:
            problems.append(f"{where}: outside any turn")
        if isinstance(event, TurnEnd):
            if open_message is not None:
                problems.append(
                    f"{where}: the turn ended with its {open_message.role} message still open"
                )
            if running:
                problems.append(
                    f"{where}: the turn ended with tool executions open: {sorted(running)}"
                )
            if compacting:
                problems.append(f"{where}: the turn ended with a compaction open")
            in_turn = compacting = False
        elif isinstance(event, CompactionStart | CompactionEnd):
            starting = isinstance(event, CompactionStart)
            if compacting == starting:
                problems.append(
                    f"{where}: a compaction started inside an open one"
                    if starting
                    else f"{where}: a compaction ended that never started"
                )
            compacting = starting
        elif isinstance(event, MessageStart):
            if open_message is not None:
                problems.append(f"{where}: a message started inside an open message")
            open_message = event.message
        elif isinstance(event, MessageUpdate):
            if not isinstance(open_message, AssistantMessage):
                what = "no message" if open_message is None else f"the {open_message.role} message"
                problems.append(f"{where}: an update with {what} open (assistant only)")
        elif isinstance(event, MessageEnd):
            if open_message is None:
                problems.append(f"{where}: a message ended that never started")
            elif open_message.role != event.message.role:
                problems.append(
                    f"{where}: the {event.message.role} message ended while the "
                    f"{open_message.role} message was open"
                )
            if isinstance(event.message, ToolResultMessage):
                call_id = event.message.tool_call_id
                if call_id not in finished:
                    problems.append(
                        f"{where}: the result message for {call_id!r} came before its "
                        f"tool_execution_end"
                    )
            open_message = None
            ended_messages.append(event.message)
        elif isinstance(event, ToolExecutionStart):
            call_id = event.tool_call_id
            if open_message is not None:
                problems.append(f"{where}: {call_id!r} started inside an open message")
            if call_id in running or call_id in finished:
                problems.append(f"{where}: {call_id!r} started twice")
            running.add(call_id)
        elif isinstance(event, ToolExecutionUpdate):
            if event.tool_call_id not in running:
                problems.append(f"{where}: an update for {event.tool_call_id!r}, not running")
        elif isinstance(event, ToolApprovalRequest):
            call_id = event.tool_call_id
            if call_id not in running:
                problems.append(f"{where}: an approval request for {call_id!r}, not started")
            running.discard(call_id)
            waiting.add(call_id)
        elif isinstance(event, ToolExecutionEnd):
            call_id = event.tool_call_id
            if call_id in finished:
                problems.append(f"{where}: {call_id!r} ended twice")
            elif call_id not in running and call_id not in waiting:
                problems.append(f"{where}: {call_id!r} ended but never started")
            running.discard(call_id)
            waiting.discard(call_id)  # an abort ends a waiting call too
            finished.add(call_id)
    if in_turn:
        problems.append("the events end inside an open turn")
    if open_message is not None:
        problems.append(f"the events end with the {open_message.role} message still open")
    if running:
        problems.append(f"tool executions started but never ended: {sorted(running)}")
    if compacting:
        problems.append("a compaction_start without its compaction_end")
    return problems


def assert_events_valid(events: Sequence[AgentEvent]) -> None:
    """:func:`check_events`, for tests.

    Raises:
        AssertionError: listing every problem found (one per line), with the event types.
    """
    problems = check_events(events)
    if problems:
        types = " ".join(event.type for event in events)
        raise AssertionError(
            "invalid event grammar:\n  " + "\n  ".join(problems) + f"\nevents: {types}"
        )
