"""What a run of the loop is configured with: the model, the hooks and the stream options."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias, final

import attrs
import trio

from .._checks import (
    count_or_none,
    describe,
    instance_of,
    non_negative_count,
    non_negative_seconds,
    one_of,
    positive_or_none,
)
from ..compaction import Compaction
from ..messages import AgentMessage, AssistantMessage, Context, Message, ToolResultMessage
from ..models import Model
from ..providers import StreamFn, StreamOptions
from ..tools import AfterToolCall, AgentContext, AgentTool, BeforeToolCall, ToolDecision

__all__ = [
    "AgentLoopConfig",
    "ConvertToLlm",
    "FinishTurn",
    "FinishTurnDecision",
    "GetApiKey",
    "GetMessages",
    "PrepareNextTurn",
    "PrepareRequest",
    "PrepareRequestContext",
    "RequestUpdate",
    "ShouldStopAfterTurn",
    "ShouldStopAfterTurnContext",
    "SteeringPolicy",
    "ToolExecution",
    "TransformContext",
    "TurnContext",
    "TurnUpdate",
]

ToolExecution: TypeAlias = Literal["parallel", "sequential"]
SteeringPolicy: TypeAlias = Literal["after_batch", "at_tool_boundary"]
"""When a steering message goes in: after the tool batch (pi's), or at once, stopping the calls
of the batch not yet finished (pi#4001)."""


@final
@attrs.frozen
class ShouldStopAfterTurnContext:
    """Given to ``should_stop_after_turn`` right after each ``turn_end``."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


TurnContext: TypeAlias = ShouldStopAfterTurnContext
"""pi 1.x's ``AgentTurnContext``: what ``finish_turn`` and ``prepare_next_turn`` are given."""

FinishTurnDecision: TypeAlias = Literal["end", "continue"] | None


@final
@attrs.frozen
class PrepareRequestContext:
    """Given to ``prepare_request`` right before each provider request: what would be sent."""

    context: Context
    model: Model
    options: StreamOptions


@final
@attrs.frozen
class RequestUpdate:
    """What ``prepare_request`` may replace for that one request (None: keep)."""

    context: Context | None = None
    model: Model | None = None
    options: StreamOptions | None = None


def _tools_or_none(tools: Sequence[AgentTool] | None) -> list[AgentTool] | None:
    """A list of the tools, refusing what is not a list of uniquely named ``AgentTool``s.

    Raises:
        TypeError: an item is not an ``AgentTool`` (or a single tool was given, not a list).
        ValueError: two tools have one name.
    """
    if tools is None:
        return None
    if isinstance(tools, AgentTool | str | bytes):
        raise TypeError("TurnUpdate(tools=...) wants a list of AgentTool; write [tool]")
    listed = list(tools)
    names: set[str] = set()
    for i, tool in enumerate(listed):
        if not isinstance(tool, AgentTool):
            raise TypeError(f"TurnUpdate tools[{i}] is a {type(tool).__name__}, not an AgentTool")
        if tool.name in names:
            raise ValueError(f"TurnUpdate tools: two tools are named {tool.name!r}")
        names.add(tool.name)
    return listed


@final
@attrs.frozen
class TurnUpdate:
    """What ``prepare_next_turn`` may change before the next turn: ``messages`` to add (with
    their message_start/end), the ``model`` / ``thinking_level`` of later requests, and the
    ``tools`` of later requests and their calls (an MCP server's changed list, say; newer pi
    replaces the next request's whole context for the same purpose)."""

    messages: Sequence[AgentMessage] = ()
    model: Model | None = None
    thinking_level: str | None = None
    tools: Sequence[AgentTool] | None = attrs.field(default=None, converter=_tools_or_none)


# Hooks may be async (the usual case) or plain functions.
TransformContext: TypeAlias = Callable[
    [Sequence[AgentMessage]], Awaitable[Sequence[AgentMessage]] | Sequence[AgentMessage]
]
ConvertToLlm: TypeAlias = Callable[
    [Sequence[AgentMessage]], Awaitable[Sequence[Message]] | Sequence[Message]
]
GetApiKey: TypeAlias = Callable[[str], Awaitable[str | None] | str | None]
GetMessages: TypeAlias = Callable[[], Awaitable[Sequence[AgentMessage]] | Sequence[AgentMessage]]
ShouldStopAfterTurn: TypeAlias = Callable[[ShouldStopAfterTurnContext], Awaitable[bool] | bool]
FinishTurn: TypeAlias = Callable[[TurnContext], Awaitable[FinishTurnDecision] | FinishTurnDecision]
PrepareRequest: TypeAlias = Callable[
    [PrepareRequestContext], Awaitable[RequestUpdate | None] | RequestUpdate | None
]
PrepareNextTurn: TypeAlias = Callable[
    [TurnContext], Awaitable[TurnUpdate | None] | TurnUpdate | None
]


_HOOK_NAMES = (
    "convert_to_llm", "transform_context", "get_api_key", "should_stop_after_turn",
    "get_steering_messages", "get_follow_up_messages", "before_tool_call", "after_tool_call",
    "stream_fn", "steering_signal", "finish_turn", "prepare_request", "prepare_next_turn",
)  # fmt: skip


def _options_or_default(options: StreamOptions | None) -> StreamOptions:
    return StreamOptions() if options is None else options


def _decisions_or_none(value: Any) -> Mapping[str, ToolDecision] | None:
    """A copy of the decisions (the run must not see later changes), None when empty.

    Raises:
        TypeError: not a mapping of tool call ids to ``pt.ToolDecision``.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"tool_decisions must be a dict or None, got {describe(value)}")
    decisions = dict(value)
    for key, item in decisions.items():
        if not isinstance(key, str) or not isinstance(item, ToolDecision):
            raise TypeError(
                "tool_decisions maps tool call ids (str) to pt.ToolDecision, got "
                f"{describe(key)}: {describe(item)}"
            )
    return decisions or None


def _hook() -> Any:
    """A keyword-only hook field (checked all at once in ``__attrs_post_init__``: one call per
    run, not one per hook)."""
    return attrs.field(default=None, kw_only=True)


@final
@attrs.frozen
class AgentLoopConfig:
    """Configuration of one run (pi's ``AgentLoopConfig``): ``AgentLoopConfig(model,
    convert_to_llm=None, *, ...)``, every other field by keyword. Every hook may be a plain
    function or an async one; the API reference's "Hook types" table says what each gets and
    returns.

    ``convert_to_llm`` turns the transcript into what the model sees; without it, the user,
    assistant and tool-result messages are passed and custom messages dropped (pi's default),
    kept up to date incrementally so a turn costs the same on a long transcript as on a short
    one. ``transform_context`` (pruning, summarising) runs first. Both work on a copy of the
    transcript made for that one request.

    ``get_api_key(provider)`` is asked right before every request (expiring tokens);
    ``stream_options.api_key`` is the fallback. ``close_timeout`` is the grace period, in
    seconds, for delivering the closing events of an aborted run; the transcript is complete
    before it starts.

    Additions beyond pi 0.73.1 (their defaults keep its behaviour): ``max_parallel_tools``, at
    most that many tool calls of a parallel batch execute at once, the others start in source
    order as places free up (events and write-back order unchanged); ``tool_timeout``, the time
    limit in seconds of a tool call whose ``AgentTool.timeout`` is None; ``steering_policy``,
    "after_batch" (pi's) or "at_tool_boundary" (pi#4001): a steering message queued while a
    batch runs stops the calls not yet finished (the ones not started are not run, the running
    ones are cancelled; a call that finished keeps its result), their error results say a
    steering message was queued, and the steer goes in before the next request.
    ``steering_signal`` is how the batch hears of it: called when a batch starts, it returns
    a ``trio.Event`` that is set when a steering message is queued after that call
    (``pt.Agent`` gives its own; required with "at_tool_boundary").

    pi 1.x hooks, as additions: ``finish_turn(turn) -> "end" | "continue" | None`` runs right
    before each ``turn_end`` (also after a response that failed; not in an abort's close-out,
    which calls no hooks): "end" ends the run after that ``turn_end``, "continue" makes sure
    one more request follows. ``prepare_request(ctx) -> RequestUpdate | None`` runs before
    every provider request and may replace that request's context copy, model or options.
    ``prepare_next_turn(turn) -> TurnUpdate | None`` runs only when another turn will start,
    before its ``turn_start``: messages to add, and the model / thinking level of later
    requests. ``should_stop_after_turn`` keeps working (after ``turn_end``).

    ``compaction`` (pi-coding-agent's, an addition; None: never): before each request whose
    context nears the model's window, and once after a request that overflowed it (which is
    then sent again), the older messages are summarised and the transcript becomes the summary
    followed by the newest messages (see :class:`pt.Compaction`).

    ``tool_decisions`` (approvals, an addition): a person's :class:`pt.ToolDecision` by tool
    call id. A run that meets a call of a tool with ``requires_approval`` and no decision
    sends ``tool_approval_request``, runs the rest of the batch and ends without calling the
    model again. A continue run (no prompts) whose transcript ends with such unanswered calls
    first runs them with these decisions (approved ones execute, denied ones get an error
    result), in a turn of their own, then goes on as usual.

    ``output_tool`` (structured output, an addition; see :func:`pt.output_tool`): every
    request offers it (and asks for a tool call, ``tool_choice="required"``, unless
    ``stream_options`` chose otherwise); a turn whose batch holds a valid call of it ends the
    run, whose ``AgentEnd.output`` is the value. A text answer is followed by a user message
    telling the model to call it; a text answer and an invalid call each count as a failed
    attempt, and after ``output_retries`` + 1 of them in a row the run ends with an assistant
    message whose stop_reason is "error" (``AgentEnd.error``: a :class:`pt.OutputError`).

    Raises:
        TypeError: a hook that is not callable, a setting of the wrong type.
        ValueError: a setting out of range (each message names it and what it takes).
    """

    model: Model = attrs.field(validator=instance_of(Model, "a pt.Model (pt.get_model(...))"))
    convert_to_llm: ConvertToLlm | None = None
    transform_context: TransformContext | None = _hook()
    get_api_key: GetApiKey | None = _hook()
    should_stop_after_turn: ShouldStopAfterTurn | None = _hook()
    get_steering_messages: GetMessages | None = _hook()
    get_follow_up_messages: GetMessages | None = _hook()
    tool_execution: ToolExecution = attrs.field(
        default="parallel", kw_only=True, validator=one_of("parallel", "sequential")
    )
    before_tool_call: BeforeToolCall | None = _hook()
    after_tool_call: AfterToolCall | None = _hook()
    stream_fn: StreamFn | None = _hook()
    stream_options: StreamOptions = attrs.field(
        kw_only=True,
        factory=StreamOptions,
        converter=_options_or_default,
        validator=instance_of(StreamOptions, "a pt.StreamOptions or None"),
    )
    close_timeout: float = attrs.field(default=5.0, kw_only=True, validator=non_negative_seconds)
    max_parallel_tools: int | None = attrs.field(
        default=None, kw_only=True, validator=count_or_none
    )
    tool_timeout: float | None = attrs.field(
        default=None, kw_only=True, validator=positive_or_none("seconds")
    )
    steering_policy: SteeringPolicy = attrs.field(
        default="after_batch", kw_only=True, validator=one_of("after_batch", "at_tool_boundary")
    )
    steering_signal: Callable[[], trio.Event] | None = _hook()
    finish_turn: FinishTurn | None = _hook()
    prepare_request: PrepareRequest | None = _hook()
    prepare_next_turn: PrepareNextTurn | None = _hook()
    compaction: Compaction | None = attrs.field(
        default=None,
        kw_only=True,
        validator=attrs.validators.optional(instance_of(Compaction, "a pt.Compaction or None")),
    )
    tool_decisions: Mapping[str, ToolDecision] | None = attrs.field(
        default=None, kw_only=True, converter=_decisions_or_none
    )
    output_tool: AgentTool | None = attrs.field(
        default=None,
        kw_only=True,
        validator=attrs.validators.optional(
            instance_of(AgentTool, "a pt.AgentTool (pt.output_tool(...)) or None")
        ),
    )
    output_retries: int = attrs.field(default=1, kw_only=True, validator=non_negative_count)

    def __attrs_post_init__(self) -> None:
        hooks = (
            self.convert_to_llm, self.transform_context, self.get_api_key,
            self.should_stop_after_turn, self.get_steering_messages, self.get_follow_up_messages,
            self.before_tool_call, self.after_tool_call, self.stream_fn, self.steering_signal,
            self.finish_turn, self.prepare_request, self.prepare_next_turn,
        )  # fmt: skip
        for name, hook in zip(_HOOK_NAMES, hooks, strict=True):
            if hook is not None and not callable(hook):
                raise TypeError(
                    f"{name} must be a function (or an async function) or None, "
                    f"got {describe(hook)}"
                )
        if self.steering_policy == "at_tool_boundary" and not callable(self.steering_signal):
            raise ValueError(
                'steering_policy="at_tool_boundary" needs steering_signal (a function returning '
                "a trio.Event that is set when a steering message is queued); pt.Agent passes "
                "its own"
            )
