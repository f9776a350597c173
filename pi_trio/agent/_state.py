"""``AgentState``: the transcript and settings an ``Agent`` owns, plus its runtime status."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, TypeAlias, final

import attrs

from .._checks import describe
from .._errors import AgentBusyError, ProviderError
from ..events import (
    AgentEnd,
    AgentEvent,
    CompactionEnd,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolApprovalRequest,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnEnd,
)
from ..messages import (
    AgentMessage,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    checked_message,
)
from ..models import Model, ModelCost
from ..tools import AgentTool, ToolDecision

__all__ = ["DEFAULT_MODEL", "AgentState", "ThinkingLevelSetting"]

ThinkingLevelSetting: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh"]

DEFAULT_MODEL = Model(
    id="unknown",
    name="unknown",
    api="unknown",
    provider="unknown",
    base_url="",
    input=(),
    cost=ModelCost(),
    context_window=0,
    max_tokens=0,
)
"""pi's placeholder model: set ``state.model`` before prompting."""


def _tool_list(value: Iterable[AgentTool]) -> list[AgentTool]:
    """A copy of ``value``, refusing at once any item that is not an :class:`AgentTool`.

    Raises:
        TypeError: ``value`` is a single tool or a string instead of a list, or one of its
            items is not an ``AgentTool`` (e.g. a bare function): the message says which and
            how to make one (``@pt.tool``).
    """
    if isinstance(value, AgentTool | str | bytes) or callable(value):
        raise TypeError(f"tools must be a list of AgentTool, got {_describe(value)}; write [tool]")
    tools = list(value)
    for i, item in enumerate(tools):
        if not isinstance(item, AgentTool):
            hint = (
                "decorate it with @pt.tool (or build a pt.AgentTool)"
                if callable(item)
                else "give a pt.AgentTool, e.g. a function decorated with @pt.tool"
            )
            raise TypeError(f"tools[{i}] is {_describe(item)}, not an AgentTool: {hint}")
    return tools


def _describe(value: object) -> str:
    name = getattr(value, "__qualname__", None)
    if callable(value) and isinstance(name, str):
        return f"the function {name}()" if not isinstance(value, type) else f"the class {name}"
    return f"a {type(value).__name__}"


def _a_model(value: Model) -> Model:
    """``value``, refusing at once what is not a :class:`pt.Model`.

    Raises:
        TypeError: a model's name (``"anthropic/claude-sonnet-4-5"``) or anything else: the
            message says how to get the model.
    """
    if isinstance(value, Model):
        return value
    hint = ""
    if isinstance(value, str):
        provider, _, model_id = value.partition("/")
        hint = f": pt.get_model({provider!r}, {model_id or '...'!r}) makes one of that name"
    raise TypeError(f"model must be a pt.Model, got {describe(value)}{hint}")


def _message_list(value: Iterable[AgentMessage]) -> list[AgentMessage]:
    """A copy of ``value``, refusing at once an item that is not a message.

    Raises:
        TypeError: ``value`` is a single message or a text instead of a list, or one of its
            items is not a message (a text, a dict of JSON): the message says which.
    """
    if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable):
        raise TypeError(f"messages must be a list of messages, got {describe(value)}")
    return [checked_message(item, f"messages[{i}]") for i, item in enumerate(value)]


_NONE_PENDING: frozenset[str] = frozenset()


@final
@attrs.define(on_setattr=attrs.setters.NO_OP)
class AgentState:
    """What an agent works with (assignable) and how its current run stands (read-only).

    Assigning ``tools`` or ``messages`` stores a copy of the given sequence, like pi. While a run
    is active, ``messages`` grows at each ``message_end`` (before listeners see the event);
    ``streaming_message`` is the assistant message being streamed; ``pending_tool_calls`` the
    ids of tools running. When the run ends, ``messages`` is the run's complete transcript even
    if some closing events could not be delivered. ``error`` is the exception behind the last
    run's failure (``AgentEnd.error``: a ``pt.ProviderError`` for a provider's failure, see
    ``provider_error``), ``None`` after a run that ended normally or was aborted.
    ``output`` is the last run's structured output (``pt.Agent(output_type=...)``): the
    validated value (an instance of the output class, or a dict), or None (no output type, a
    run that failed or was aborted before its answer, or a run under way).
    """

    system_prompt: str = ""
    _model: Model = attrs.field(default=DEFAULT_MODEL, converter=_a_model, alias="model")
    thinking_level: ThinkingLevelSetting = "off"
    # Copies on assignment are made by the properties below; plain attribute writes elsewhere
    # (the run updates this state for every event) stay as cheap as Python allows.
    _tools: list[AgentTool] = attrs.field(factory=list, converter=_tool_list, alias="tools")
    _messages: list[AgentMessage] = attrs.field(
        factory=list, converter=_message_list, alias="messages"
    )
    is_streaming: bool = attrs.field(default=False, init=False)
    # a run appends to the transcript (``messages``) until its agent_end
    _appending: bool = attrs.field(default=False, init=False, repr=False, eq=False)
    streaming_message: AgentMessage | None = attrs.field(default=None, init=False)
    # None while no tool runs (an idle agent, most of a run): no empty set per agent
    _pending: set[str] | None = attrs.field(default=None, init=False, repr=False)
    error_message: str | None = attrs.field(default=None, init=False)
    error: BaseException | None = attrs.field(default=None, init=False)
    output: Any = attrs.field(default=None, init=False)
    compaction_usage: tuple[int, float] = attrs.field(default=(0, 0.0), init=False, repr=False)
    """Tokens and cost of the summaries compaction made in the current (or last) run, which
    the budgets count (pi_trio's addition)."""
    # tool calls waiting for a person (by id, in request order) and the decisions made so far;
    # None while there are none (every agent, nearly always)
    _waiting: dict[str, ToolCall] | None = attrs.field(default=None, init=False, repr=False)
    _decisions: dict[str, ToolDecision] | None = attrs.field(default=None, init=False, repr=False)
    # the calls of the assistant message whose calls are being asked about, by id (the first
    # of an id), so that a batch of n waiting calls costs O(n), not O(n^2); dropped at run end
    _asked: tuple[AssistantMessage, dict[str, ToolCall]] | None = attrs.field(
        default=None, init=False, repr=False, eq=False
    )

    @property
    def model(self) -> Model:
        return self._model

    @model.setter
    def model(self, value: Model) -> None:
        self._model = _a_model(value)

    @property
    def tools(self) -> list[AgentTool]:
        return self._tools

    @tools.setter
    def tools(self, value: Iterable[AgentTool]) -> None:
        self._tools = _tool_list(value)

    @property
    def messages(self) -> list[AgentMessage]:
        return self._messages

    @messages.setter
    def messages(self, value: Iterable[AgentMessage]) -> None:
        """Replace the transcript (a copy of ``value``).

        Raises:
            AgentBusyError: a run is under way and appends to the transcript until its
                ``agent_end`` (its later messages would be lost): ``steer()``/``follow_up()``
                add to a run; ``abort()`` and ``wait_for_idle()`` first to replace it.
        """
        if self._appending:
            raise AgentBusyError(
                "Cannot replace state.messages while a run appends to it (or a compaction "
                "replaces it): steer() or follow_up() to add to the run, or abort() and "
                "wait_for_idle() first."
            )
        self._messages = _message_list(value)
        self._waiting = self._decisions = self._asked = None  # a new transcript: no call waits

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        """Ids of the tool calls started and not yet ended (a snapshot: O(running calls))."""
        pending = self._pending
        return _NONE_PENDING if pending is None else frozenset(pending)

    @property
    def pending_approvals(self) -> tuple[ToolCall, ...]:
        """The tool calls waiting for a person's decision (``agent.approve``/``deny``), in the
        order they were requested; decided ones wait for ``continue_()`` and are not here."""
        if self._waiting is not None:
            self._forget_answered()
        waiting, decisions = self._waiting, self._decisions or {}
        if waiting is None:
            return ()
        return tuple(call for key, call in waiting.items() if key not in decisions)

    @property
    def tool_decisions(self) -> dict[str, ToolDecision]:
        """The decisions made about waiting calls that ``continue_()`` has not run yet (a
        copy, by tool call id)."""
        return dict(self._decisions or {})

    @property
    def awaiting_approval(self) -> bool:
        """Whether tool calls wait for a decision or for ``continue_()`` to run them: the
        model is not called before they have results. A call answered in the transcript
        meanwhile (a result added to ``messages`` by hand) waits no more."""
        if self._waiting is not None:
            self._forget_answered()
        return self._waiting is not None

    def decide(self, tool_call_id: str, decision: ToolDecision) -> ToolCall:
        """Record a person's decision about a waiting call (what ``agent.approve``/``deny``
        do); the call.

        Raises:
            KeyError: no call of that id waits for a decision, or it was decided already
                (the message says which, and what waits).
            TypeError: ``tool_call_id`` is not a string.
        """
        if not isinstance(tool_call_id, str):
            raise TypeError(
                f"tool_call_id must be a str (a ToolCall's .id), got {describe(tool_call_id)}"
            )
        if self._waiting is not None:
            self._forget_answered()
        waiting = self._waiting or {}
        call = waiting.get(tool_call_id)
        if call is None:
            ids = ", ".join(repr(key) for key in waiting) or "none"
            raise KeyError(f"no tool call {tool_call_id!r} waits for a decision (waiting: {ids})")
        decisions = self._decisions
        if decisions is None:
            decisions = self._decisions = {}
        if tool_call_id in decisions:
            earlier = "approved" if decisions[tool_call_id].approved else "denied"
            raise KeyError(f"tool call {tool_call_id!r} was {earlier} already")
        decisions[tool_call_id] = decision
        return call

    def restore_approvals(
        self, waiting: Iterable[ToolCall], decisions: dict[str, ToolDecision]
    ) -> None:
        """Set the waiting calls and their decisions (a resumed session's, from its log)."""
        self._waiting = {call.id: call for call in waiting} or None
        self._decisions = {
            key: value for key, value in decisions.items() if key in (self._waiting or {})
        } or None

    def _requested(self, tool_call_id: str) -> None:
        """A ``tool_approval_request``: its call waits (and no longer runs)."""
        pending = self._pending
        if pending is not None:
            pending.discard(tool_call_id)
            if not pending:
                self._pending = None
        for message in reversed(self._messages):
            if isinstance(message, AssistantMessage):
                asked = self._asked
                if asked is None or asked[0] is not message:
                    calls: dict[str, ToolCall] = {}
                    for call in message.tool_calls:
                        calls.setdefault(call.id, call)
                    asked = self._asked = (message, calls)
                found = asked[1].get(tool_call_id)
                if found is not None:
                    if self._waiting is None:
                        self._waiting = {}
                    self._waiting[tool_call_id] = found
                return

    def _forget_answered(self) -> None:
        """Drop the waiting calls that have a result after their assistant message."""
        for message in reversed(self._messages):
            if isinstance(message, ToolResultMessage):
                self._answered(message.tool_call_id)
            else:
                return

    def _answered(self, tool_call_id: str) -> None:
        """A call that waited has its result: it waits no more."""
        waiting = self._waiting
        if waiting is not None and waiting.pop(tool_call_id, None) is not None:
            if self._decisions is not None:
                self._decisions.pop(tool_call_id, None)
                if not self._decisions:
                    self._decisions = None
            if not waiting:
                self._waiting = None

    @property
    def provider_error(self) -> ProviderError | None:
        """``error`` when the last run failed at the provider: kind, HTTP status, retry facts."""
        return self.error if isinstance(self.error, ProviderError) else None

    @property
    def last_assistant_message(self) -> AssistantMessage | None:
        """The most recent assistant message of the transcript, if any."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def apply_event(self, event: AgentEvent) -> None:
        """Reduce one event of a run into the runtime fields (pi's ``processEvents``).

        The run calls it for each event before any listener sees it. ``messages`` is not
        touched here: it is the run's live transcript, which grows at each ``message_end``.
        """
        # one branch per event type that changes the runtime fields, the most frequent first
        # (no call per event: the run applies ~20 events per turn)
        cls = type(event)
        if cls is MessageStart or cls is MessageUpdate:
            self.streaming_message = event.message  # type: ignore[union-attr]
        elif cls is MessageEnd:
            self.streaming_message = None
        elif cls is ToolExecutionStart:
            pending = self._pending
            if pending is None:
                pending = self._pending = set()
            pending.add(event.tool_call_id)  # type: ignore[union-attr]
        elif cls is ToolExecutionEnd:
            pending = self._pending
            if pending is not None:
                pending.discard(event.tool_call_id)  # type: ignore[union-attr]
                if not pending:
                    self._pending = None
            if self._waiting is not None:
                self._answered(event.tool_call_id)  # type: ignore[union-attr]
        elif cls is TurnEnd:
            message = event.message  # type: ignore[union-attr]
            if isinstance(message, AssistantMessage) and message.error_message:
                self.error_message = message.error_message
        elif cls is AgentEnd:
            self.streaming_message = None
            self._appending = False  # the transcript is complete: its listeners may replace it
            self.error = event.error  # type: ignore[union-attr,assignment]
            self.output = event.output  # type: ignore[union-attr]
        else:
            self._apply_rare(event)

    def _apply_rare(self, event: AgentEvent) -> None:
        """The events of :meth:`apply_event` that few runs send."""
        if isinstance(event, ToolApprovalRequest):
            self._requested(event.tool_call_id)
        elif isinstance(event, CompactionEnd) and event.usage is not None:
            tokens, cost = self.compaction_usage
            usage = event.usage
            self.compaction_usage = (tokens + usage.total_tokens, cost + usage.cost.total)

    def begin_run(self) -> None:
        """Reset the runtime fields for a new run (``is_streaming`` true until it ends)."""
        self.is_streaming = self._appending = True
        self.streaming_message = None
        self.error_message = self.error = self.output = None
        self.compaction_usage = (0, 0.0)

    def begin_compaction(self) -> None:
        """``agent.compact()`` began: replacing the transcript is refused until
        :meth:`end_run` (the compaction replaces it when its summary arrives)."""
        self._appending = True

    def end_run(self) -> None:
        """Reset the runtime fields once a run is over; ``error_message`` is the last
        message's, when it failed."""
        last = self._messages[-1] if self._messages else None
        if isinstance(last, AssistantMessage) and last.error_message:
            self.error_message = last.error_message
        self.is_streaming = self._appending = False
        self.streaming_message = None
        self._pending = self._asked = None

    def clear(self) -> None:
        """Forget the transcript and the runtime fields (``Agent.reset``)."""
        self._messages = []
        self._waiting = self._decisions = self._asked = None
        self.is_streaming = False
        self.streaming_message = None
        self._pending = None
        self.error_message = self.error = self.output = None
