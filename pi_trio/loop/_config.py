"""What a run of the loop is configured with: the model, the hooks and the stream options."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol, TypeAlias, final

import attrs

from ..events import AgentEvent
from ..messages import AgentMessage, AssistantMessage, Message, ToolResultMessage
from ..models import Model
from ..providers import StreamFn, StreamOptions
from ..tools import AfterToolCall, AgentContext, BeforeToolCall

__all__ = [
    "AgentLoopConfig",
    "ConvertToLlm",
    "EventSink",
    "GetApiKey",
    "GetMessages",
    "ShouldStopAfterTurn",
    "ShouldStopAfterTurnContext",
    "ToolExecution",
    "TransformContext",
]

ToolExecution: TypeAlias = Literal["parallel", "sequential"]


class EventSink(Protocol):
    """Where the loop sends its events: a ``trio.MemorySendChannel`` or anything alike.

    The loop awaits ``send(event)`` for each event, in order, from the task that runs it (or,
    during a parallel tool batch, from one tool task at a time). Two rules a sink must keep:

    * **A cancelled send is retried.** When a cancellation interrupts ``send(event)``, the
      run's close-out calls ``send`` again with the *same* event object before the closing
      events. A memory channel's cancelled send delivered nothing, so this delivers it once; a
      sink that fans out (``pt.Agent``'s) resumes with the receivers that missed it. A sink that
      cannot tell should make its sends idempotent for the same object.
    * **An exception from send ends the run** with stop_reason "error" (the exception's text);
      the closing events are still sent, and their exceptions are ignored.

    A sink may also have a synchronous ``apply(event)`` (read once per run): the loop calls it
    for each event before sending it, and for every closing event before it delivers any of
    them, so the sink's own state is complete even when delivery is cut short. A
    ``message_update`` whose message is the one already streaming is not applied (it changes no
    state); every other event is.
    """

    def send(self, value: AgentEvent, /) -> Awaitable[None]: ...


@final
@attrs.frozen
class ShouldStopAfterTurnContext:
    """Given to ``should_stop_after_turn`` right after each ``turn_end``."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


# Hooks may be async (the usual case) or plain functions.
TransformContext: TypeAlias = Callable[
    [Sequence[AgentMessage]], "Awaitable[Sequence[AgentMessage]] | Sequence[AgentMessage]"
]
ConvertToLlm: TypeAlias = Callable[
    [Sequence[AgentMessage]], "Awaitable[Sequence[Message]] | Sequence[Message]"
]
GetApiKey: TypeAlias = Callable[[str], "Awaitable[str | None] | str | None"]
GetMessages: TypeAlias = Callable[[], "Awaitable[Sequence[AgentMessage]] | Sequence[AgentMessage]"]
ShouldStopAfterTurn: TypeAlias = Callable[[ShouldStopAfterTurnContext], "Awaitable[bool] | bool"]


@final
@attrs.frozen
class AgentLoopConfig:
    """Configuration of one run (pi's ``AgentLoopConfig``): ``AgentLoopConfig(model,
    convert_to_llm=None, *, ...)``, every other field by keyword.

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
    limit in seconds of a tool call whose ``AgentTool.timeout`` is None.
    """

    model: Model
    convert_to_llm: ConvertToLlm | None = None
    transform_context: TransformContext | None = attrs.field(default=None, kw_only=True)
    get_api_key: GetApiKey | None = attrs.field(default=None, kw_only=True)
    should_stop_after_turn: ShouldStopAfterTurn | None = attrs.field(default=None, kw_only=True)
    get_steering_messages: GetMessages | None = attrs.field(default=None, kw_only=True)
    get_follow_up_messages: GetMessages | None = attrs.field(default=None, kw_only=True)
    tool_execution: ToolExecution = attrs.field(default="parallel", kw_only=True)
    before_tool_call: BeforeToolCall | None = attrs.field(default=None, kw_only=True)
    after_tool_call: AfterToolCall | None = attrs.field(default=None, kw_only=True)
    stream_fn: StreamFn | None = attrs.field(default=None, kw_only=True)
    stream_options: StreamOptions = attrs.field(kw_only=True, factory=StreamOptions)
    close_timeout: float = attrs.field(default=5.0, kw_only=True)
    max_parallel_tools: int | None = attrs.field(default=None, kw_only=True)
    tool_timeout: float | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.max_parallel_tools is not None and self.max_parallel_tools < 1:
            raise ValueError(
                f"max_parallel_tools must be >= 1 or None, got {self.max_parallel_tools!r}"
            )
        if self.tool_timeout is not None and not self.tool_timeout > 0:
            raise ValueError(f"tool_timeout must be > 0 seconds or None, got {self.tool_timeout!r}")
