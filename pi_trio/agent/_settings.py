"""``AgentSettings``: every keyword option of ``pt.Agent``, as one validated record."""

from __future__ import annotations

import functools
from typing import Any, final

import attrs

from .._checks import (
    count_or_none,
    hook_field,
    instance_of,
    non_negative_count,
    non_negative_seconds,
    one_of,
    positive_or_none,
    str_or_none,
)
from ..compaction import Compaction
from ..loop import (
    ConvertToLlm,
    FinishTurn,
    GetApiKey,
    PrepareNextTurn,
    PrepareRequest,
    ShouldStopAfterTurn,
    SteeringPolicy,
    ToolExecution,
    TransformContext,
)
from ..providers import StreamFn, StreamOptions
from ..tools import AfterToolCall, AgentTool, BeforeToolCall, OutputType, output_tool
from ._inbox import QueueMode
from ._recorder import Recorder

__all__ = ["SETTING_NAMES", "AgentSettings", "recorder_change_problem"]

_DEFAULT_OPTIONS = StreamOptions()  # shared by every agent: StreamOptions is frozen


def _options(value: StreamOptions | None) -> StreamOptions:
    return _DEFAULT_OPTIONS if value is None else value


def _recorder(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, Recorder):
        raise TypeError(
            "recorder must be a pt.Recorder (with record, flush, queued and cleared) or None, "
            f"got a {type(value).__name__}"
        )


_QUEUE_MODE = one_of("one-at-a-time", "all")


def _output_type(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs class or a JSON-schema dict of an object, or None: checked by making its
    tool (which raises the ``TypeError`` or ``ValueError`` that says what is wrong)."""
    if value is not None:
        output_tool(value)


@final
@attrs.frozen(kw_only=True)
class AgentSettings:
    """How an agent runs: its hooks, its queues' modes, its tool batches, its budgets.

    ``pt.Agent(**options)`` takes the same keywords; ``agent.settings`` reads the record and
    replaces it whole (``agent.settings = agent.settings.evolve(max_turns=5)``), and each
    option is also an attribute of the agent (``agent.max_turns = 5`` replaces the record the
    same way). Every value is checked where it is set, so a bad one raises there, not at the
    next prompt. A run takes the settings it starts with; a change during a run is for the
    next one (the queues' modes take effect at once). A new record may not drop the agent's
    recorder nor carry another agent's: ``agent.recorder = ...`` changes it, between runs.

    Hooks (``convert_to_llm``, ``transform_context``, ``get_api_key``, ``before_tool_call``,
    ``after_tool_call``, ``should_stop_after_turn``, and pi 1.x's ``finish_turn``,
    ``prepare_request``, ``prepare_next_turn``) are those of :class:`pt.AgentLoopConfig`, as
    are ``tool_execution``, ``close_timeout`` (seconds), ``max_parallel_tools``,
    ``tool_timeout`` and ``steering_policy``. ``stream_fn`` defaults to
    :func:`pt.stream_simple`; ``stream_options`` are the base options of every request (the
    agent adds ``reasoning`` from ``state.thinking_level``, and ``session_id``).
    ``steering_mode`` and ``follow_up_mode``: "one-at-a-time" (pi's) or "all" per poll.
    ``recorder``: told every event before it is delivered (see :class:`pt.Recorder`).
    ``max_turns``, ``max_tool_calls``, ``max_total_tokens`` and ``max_cost`` (dollars) are
    per-run budgets: when one is reached the run ends after that turn (never mid-tool),
    ``state.error_message`` says which, and ``events()`` channels get a
    :class:`pt.BudgetReached`; the summaries ``compaction`` makes, and what tools report they
    spent (``ToolResult.usage``: a sub-agent's total), count toward the last two, and a run
    nested in a tool (a sub-agent) also ends once an enclosing run's last two are used up.
    ``compaction``: a :class:`pt.Compaction` to summarise the transcript's older messages when
    it nears the model's context window (None: never, as pi 0.73.1).
    ``output_type`` (structured output; None: none, as pi): an attrs class or a JSON-schema
    dict; every run offers :func:`pt.output_tool` of it, asks for a tool call, and ends once
    the model called it with valid arguments, with the value in ``state.output``; a text
    answer is followed by a message telling the model to call it. ``output_retries``: how
    many failed attempts (a text answer, an invalid call) the model may follow with another;
    one more ends the run with stop_reason "error" (``state.error``: a
    :class:`pt.OutputError`). ``output_tool`` is the tool made from ``output_type``.

    Raises:
        TypeError: a hook that is not callable, or a value of the wrong type.
        ValueError: a value out of range (the message names the option and what it takes).
    """

    convert_to_llm: ConvertToLlm | None = hook_field()
    transform_context: TransformContext | None = hook_field()
    stream_fn: StreamFn | None = hook_field()
    get_api_key: GetApiKey | None = hook_field()
    before_tool_call: BeforeToolCall | None = hook_field()
    after_tool_call: AfterToolCall | None = hook_field()
    should_stop_after_turn: ShouldStopAfterTurn | None = hook_field()
    steering_mode: QueueMode = attrs.field(default="one-at-a-time", validator=_QUEUE_MODE)
    follow_up_mode: QueueMode = attrs.field(default="one-at-a-time", validator=_QUEUE_MODE)
    tool_execution: ToolExecution = attrs.field(
        default="parallel", validator=one_of("parallel", "sequential")
    )
    session_id: str | None = attrs.field(default=None, validator=str_or_none)
    stream_options: StreamOptions = attrs.field(
        default=_DEFAULT_OPTIONS,
        converter=_options,
        validator=instance_of(StreamOptions, "a pt.StreamOptions or None"),
    )
    close_timeout: float = attrs.field(default=5.0, validator=non_negative_seconds)
    recorder: Recorder | None = attrs.field(default=None, validator=_recorder)
    max_parallel_tools: int | None = attrs.field(default=None, validator=count_or_none)
    tool_timeout: float | None = attrs.field(default=None, validator=positive_or_none("seconds"))
    steering_policy: SteeringPolicy = attrs.field(
        default="after_batch", validator=one_of("after_batch", "at_tool_boundary")
    )
    max_turns: int | None = attrs.field(default=None, validator=count_or_none)
    max_tool_calls: int | None = attrs.field(default=None, validator=count_or_none)
    max_total_tokens: int | None = attrs.field(default=None, validator=count_or_none)
    max_cost: float | None = attrs.field(default=None, validator=positive_or_none("dollars"))
    finish_turn: FinishTurn | None = hook_field()
    prepare_request: PrepareRequest | None = hook_field()
    prepare_next_turn: PrepareNextTurn | None = hook_field()
    compaction: Compaction | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(instance_of(Compaction, "a pt.Compaction or None")),
    )
    output_type: OutputType | None = attrs.field(default=None, validator=_output_type)
    output_retries: int = attrs.field(default=1, validator=non_negative_count)

    @functools.cached_property
    def output_tool(self) -> AgentTool | None:
        """The tool the model answers through, made from ``output_type`` once per record
        (None without one)."""
        return None if self.output_type is None else output_tool(self.output_type)

    def evolve(self, **changes: Any) -> AgentSettings:
        """A copy with ``changes`` (checked like the original).

        Raises:
            TypeError: an unknown option, or a value of the wrong type.
            ValueError: a value out of range.
        """
        return attrs.evolve(self, **changes)


SETTING_NAMES = frozenset(field.name for field in attrs.fields(AgentSettings))


def recorder_change_problem(current: Recorder | None, new: Recorder | None) -> str | None:
    """Why a replacement settings record may not change the recorder (None: it may not, and
    does not). A durable session's recorder must not be dropped, nor another agent's taken, by
    replacing a whole record; ``agent.recorder = ...`` changes it on purpose."""
    if new is current:
        return None
    if new is None:
        return (
            "the new settings would drop this agent's recorder (a durable session's, say): keep "
            "it with agent.settings.evolve(...), or detach it on purpose with agent.recorder = None"
        )
    return (
        "the new settings carry another recorder (another agent's?): a recorder serves one "
        "agent; set agent.recorder = ... on purpose, between runs"
    )
