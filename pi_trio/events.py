"""Stream events (what a provider emits) and agent events (what the loop emits).

Both are slotted attrs classes whose class attribute ``type`` is pi's string, so
``match event: case pt.TextDelta(delta=d): ...`` and ``event.type == "text_delta"`` both work.
They compare and hash by value, as frozen classes would, but are not frozen: a frozen attrs
instance sets each attribute through ``object.__setattr__``, which doubles the cost of building
one, and every streamed delta builds them. Treat events as read-only all the same: sinks and
listeners share them.

Stream events carry ``partial``: the assistant message being built. It is the *live* object the
provider fills in (pi hands out shallow copies; copying per delta would make streaming O(n^2)),
so copy it if you keep it past the event.

Every event class is ``@final``: match on them, do not subclass them (the wire format and the
loop know exactly these).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias, final

import attrs

from ._stream_events import (
    StreamDone,
    StreamError,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from .messages import (
    NOT_ON_WIRE,
    AgentMessage,
    AssistantMessage,
    ToolResultContent,
    ToolResultMessage,
    Usage,
    kept_field,
)

__all__ = [
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "BudgetReached",
    "CompactionEnd",
    "CompactionReason",
    "CompactionStart",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "QueueUpdate",
    "StreamDone",
    "StreamError",
    "StreamEvent",
    "StreamStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolApprovalRequest",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolResult",
    "TurnEnd",
    "TurnStart",
]


CompactionReason: TypeAlias = Literal["threshold", "overflow", "manual"]


# --- tool results ----------------------------------------------------------------------------


@final
@attrs.define
class ToolResult:
    """What a tool returns: content for the model, details for the application.

    ``terminate=True`` asks the loop to stop after this batch; it only does when every result in
    the batch asks for it. ``is_error=True`` (pi 1.x) reports a failure without raising: the
    model gets the content as an error result.

    ``structured_content`` (pi 1.x: a JSON value matching the tool's ``output_schema``) is for
    programmatic callers: it travels in ``tool_execution_end`` and is never sent to the model.
    ``usage`` is what the tool spent on models itself (a sub-agent's tokens and cost); it is
    copied to the tool result message. In a partial result (``on_update``) it is what the
    call has spent so far: a call whose result gives none (one cut short by its timeout, a
    steering message or an abort, or one that raised) reports the last one given.
    """

    content: list[ToolResultContent]
    details: Any = None
    terminate: bool = False
    is_error: bool | None = None
    structured_content: Any = None
    usage: Usage | None = None
    extra: dict[str, Any] | None = kept_field()


# --- agent events (pi-agent-core's AgentEvent) -----------------------------------------------


@final
@attrs.define(unsafe_hash=True)
class AgentStart:
    """A run began (the first event of every run)."""

    type: ClassVar[Literal["agent_start"]] = "agent_start"
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class AgentEnd:
    """The run is over; ``messages`` are the messages this run added. pi_trio's additions,
    not in pi's JSON: ``error``, the exception behind a run that ended with stop_reason "error"
    (a :class:`pi_trio.ProviderError` for a provider's failure, a :class:`pi_trio.OutputError`,
    else what the stream function, a hook or a listener raised: its text is the error message),
    None for a run that ended normally or was aborted; ``output``, the structured output's
    validated value (``output_type``: an instance of the output class, or a dict), or None.
    """

    type: ClassVar[Literal["agent_end"]] = "agent_end"
    messages: list[AgentMessage]
    error: BaseException | None = attrs.field(
        default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE
    )
    output: Any = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class TurnStart:
    """A turn began: one model call and the tool batch it asks for."""

    type: ClassVar[Literal["turn_start"]] = "turn_start"
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class TurnEnd:
    """A turn ended; ``message`` is its assistant message, ``tool_results`` its batch's
    results in source order (empty when the model called no tool, or its message failed or was
    aborted)."""

    type: ClassVar[Literal["turn_end"]] = "turn_end"
    message: AgentMessage
    tool_results: list[ToolResultMessage]
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class MessageStart:
    """A message enters the transcript (a prompt, the streaming assistant message, a tool
    result, a steering or follow-up message)."""

    type: ClassVar[Literal["message_start"]] = "message_start"
    message: AgentMessage
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class MessageUpdate:
    """A streamed change to the assistant message at the transcript's tail."""

    type: ClassVar[Literal["message_update"]] = "message_update"
    message: AssistantMessage
    assistant_message_event: StreamEvent
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class MessageEnd:
    """The message is complete and in the transcript."""

    type: ClassVar[Literal["message_end"]] = "message_end"
    message: AgentMessage
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class ToolExecutionStart:
    """A tool call of the batch is being prepared; ``args`` are the model's arguments."""

    type: ClassVar[Literal["tool_execution_start"]] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: Any
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class ToolApprovalRequest:
    """A tool call waits for a person's decision (pi_trio's addition; its tool has
    ``requires_approval``): it follows the call's ``tool_execution_start`` and stands for its
    end in this run. The call does not run until ``agent.approve(tool_call_id)`` and
    ``agent.continue_()``; ``args`` are the model's arguments."""

    type: ClassVar[Literal["tool_approval_request"]] = "tool_approval_request"
    tool_call_id: str
    tool_name: str
    args: Any
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class ToolExecutionUpdate:
    """Progress of a running tool: ``partial_result`` is what it passed to
    ``on_update``."""

    type: ClassVar[Literal["tool_execution_update"]] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: Any
    partial_result: ToolResult
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class ToolExecutionEnd:
    """A tool call finished (in completion order): ``result`` is what the model will see;
    ``is_error`` for failures, unknown tools, invalid arguments, blocked or aborted calls.

    ``error`` (pi_trio's addition, not in pi's JSON): the exception itself when the result
    comes from one (the tool, ``prepare_arguments``, validation, ``before_tool_call`` or
    ``after_tool_call`` raised), with its traceback; the model sees only its text.
    ``duration_ms`` is how long the tool ran, in whole milliseconds (pi 1.6's ``durationMs``;
    None for a call that never ran: unknown tool, invalid arguments, blocked).
    """

    type: ClassVar[Literal["tool_execution_end"]] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: ToolResult
    is_error: bool
    duration_ms: float | None = attrs.field(default=None, kw_only=True, eq=False)
    error: BaseException | None = attrs.field(
        default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE
    )
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class QueueUpdate:
    """An agent's steering or follow-up queue changed (pi_trio's addition; not pi's JSON).

    ``change`` says how ("queued", "removed", "replaced", "cleared", "drained": taken by a
    run); ``queued`` is that queue's content afterwards, in order (``pt.QueuedMessage``
    records). Queues change outside runs too, so this goes to ``agent.events()`` channels only,
    at once, never to ``subscribe()`` listeners (whose stream is pi's run grammar).
    """

    type: ClassVar[Literal["queue_update"]] = "queue_update"
    kind: Literal["steer", "follow_up"]
    change: Literal["queued", "removed", "replaced", "cleared", "drained"]
    queued: tuple[Any, ...]
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class BudgetReached:
    """A run budget of the agent was reached; the run ends after the current turn (pi_trio's
    addition, on ``events()`` channels only, like :class:`QueueUpdate`; not pi's JSON).

    ``budget`` is the option's name ("max_turns", "max_tool_calls", "max_total_tokens",
    "max_cost"), ``limit`` its value, ``used`` what this run used.
    """

    type: ClassVar[Literal["budget_reached"]] = "budget_reached"
    budget: str
    limit: float
    used: float
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class CompactionStart:
    """Compaction began (pi-coding-agent's ``compaction_start``); ``reason``: "threshold",
    "overflow" (a request was too long) or "manual" (``agent.compact()``)."""

    type: ClassVar[Literal["compaction_start"]] = "compaction_start"
    reason: CompactionReason
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


@final
@attrs.define(unsafe_hash=True)
class CompactionEnd:
    """A compaction ended (pi-coding-agent's ``compaction_end``): ``summary`` is None when it
    failed (``error`` says why), was aborted or had nothing to cut; ``will_retry``: the request
    that overflowed is sent again. Not on the wire: ``first_kept`` (index of the first message
    kept in the transcript before it), ``kept_system`` (indexes, in that transcript, of the
    system messages before ``first_kept``: kept too, right after the summary), ``kept_count``
    (how many messages from ``first_kept`` on were kept), ``usage`` (the summary's, counted
    by the budgets)."""

    type: ClassVar[Literal["compaction_end"]] = "compaction_end"
    summary: str | None
    tokens_before: int
    error: str | None = None
    reason: CompactionReason = attrs.field(default="threshold", kw_only=True)
    aborted: bool = attrs.field(default=False, kw_only=True)
    will_retry: bool = attrs.field(default=False, kw_only=True)
    first_kept: int | None = attrs.field(default=None, kw_only=True, metadata=NOT_ON_WIRE)
    kept_system: tuple[int, ...] = attrs.field(default=(), kw_only=True, metadata=NOT_ON_WIRE)
    kept_count: int | None = attrs.field(default=None, kw_only=True, metadata=NOT_ON_WIRE)
    usage: Usage | None = attrs.field(
        default=None, kw_only=True, eq=False, hash=False, metadata=NOT_ON_WIRE
    )
    extra: dict[str, Any] | None = kept_field()
    seq: int | None = attrs.field(default=None, kw_only=True, eq=False, metadata=NOT_ON_WIRE)


AgentEvent: TypeAlias = (
    AgentStart
    | AgentEnd
    | TurnStart
    | TurnEnd
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | ToolApprovalRequest
    | CompactionStart
    | CompactionEnd
)
