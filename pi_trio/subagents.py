"""Sub-agents: a tool whose execution runs another agent, under the caller's cancel scope.

``pt.subagent_tool(name, description, agent_factory)`` is an :class:`pt.AgentTool` whose
execution prompts a child agent with the call's task and returns the child's last assistant
text. What Trio makes structural:

- **Cancellation.** The child's run is an ``await`` inside the tool's execution, so it sits in
  the parent's cancel scope: ``abort()``, a caller's deadline or the tool's timeout cancel it
  where it is; the child closes its transcript in pi's aborted shape (as any run cancelled
  from its caller's scope does) and no task of it is left when the tool's call is over.
- **Events.** Every child event reaches the parent's subscribers, in order, as a
  ``tool_execution_update`` of the parent's call whose ``partial_result.details`` is
  ``{"subagent": {"depth": d, "event": <the child event's pi JSON>}}`` (``content`` empty);
  a ``message_update`` is forwarded without its partial message (see :func:`_update_json`).
  ``d`` is 1 for a child; a grandchild's events arrive inside its parent's
  ``tool_execution_update`` events with depth 2, and so on: the nesting is the tree.
- **Structured output.** A child made with ``output_type`` gives its validated value as the
  result: ``structured_content`` is its JSON (:func:`pt.output_json`), and so is the text; a
  child that gave none (its attempts ran out) is the call's error result.
- **Usage and budgets.** The result's ``usage`` is everything the child spent for this call
  (its model responses and its own tools' reported usage, grandchildren included), which the
  parent's ``max_total_tokens``/``max_cost`` count. A forwarded ``message_end`` of a model
  response or a tool result carries the child's spending so far as its ``usage``, so a call
  cut short (its timeout, a steering message) or failing after the child ran still reports
  what the child spent (grandchildren included). While the
  child runs, the parent's remaining budget bounds it (sibling children draw on the same
  remainder, and a child ends after the turn that exhausts it).
- **Safety.** Past ``max_depth`` nested sub-agents (default 4, counted per task through a
  context variable that the tool batch's tasks inherit), the call is an error result and no
  agent is made. Whatever goes wrong in the child (its factory raises, its model fails, it is
  busy) is the call's error result; nothing reaches the parent as an exception but the
  parent's own cancellation.

**Durable children.** ``agent_factory`` may return an async context manager yielding the agent,
such as ``store.open_agent(f"{parent_session}/{tool_call_id}", ...)`` (a session id of its own
per call): the child's session is then logged as it runs. The tool declares
``replay="safe"``, so when the parent's process dies mid-child, resuming the parent session
re-runs this call instead of giving it an "outcome unknown" result. The re-run calls
``agent_factory`` again with the same call id, which re-opens the same child session (its own
repair closes its interrupted run; its tools follow their own ``replay`` policies), and then
goes on from the task's prompt in its transcript:

- a child whose transcript already ends with its answer (it finished, the parent's log did
  not get the result) gives that answer again, without a model call;
- a child whose transcript ends with tool results or a user message is continued
  (``continue_()``);
- a child whose transcript ends with an interrupted (aborted or failed) answer is prompted with
  :data:`RESUME_TEXT`.

A child from a context manager whose transcript has no user message with the task's text is
simply prompted with it.

Only with a child factory that returns a fresh in-memory ``pt.Agent`` does the re-run start
the child over from its task (its tools run again): pass ``replay="never"`` for such a child
whose tools must not run twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Any, Literal, TypeAlias

import attrs

from ._callbacks import exception_text, is_async_callable
from ._checks import describe
from .agent import Agent
from .events import (
    AgentEvent,
    CompactionEnd,
    MessageEnd,
    MessageUpdate,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from .messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .tools import AgentTool, OnUpdate, output_json

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MAX_DEPTH_LIMIT",
    "RESUME_TEXT",
    "TASK_PARAMETERS",
    "AgentFactory",
    "subagent_depth",
    "subagent_tool",
]

DEFAULT_MAX_DEPTH = 4
MAX_DEPTH_LIMIT = 12
"""The deepest nesting allowed: each level nests the forwarded events 4 JSON levels deeper,
and pi_trio's wire format refuses JSON nested deeper than 64."""
RESUME_TEXT = "Your previous run of this task was interrupted. Continue the task."
"""The prompt a resumed durable child gets when its run was interrupted mid-answer."""

TASK_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the sub-agent should do"}},
    "required": ["task"],
}
"""The default parameters of a sub-agent tool: one task text."""

AgentFactory: TypeAlias = Callable[[str, Any], "Agent | AbstractAsyncContextManager[Agent]"]
"""``agent_factory(tool_call_id, params)``: the child agent, or an async context manager
yielding it (a durable child: ``store.open_agent(...)``)."""

_DEPTH: ContextVar[int] = ContextVar("pi_trio_subagent_depth", default=0)


def subagent_depth() -> int:
    """How many sub-agent runs enclose the current task (0 outside any)."""
    return _DEPTH.get()


def subagent_tool(
    name: str,
    description: str,
    agent_factory: AgentFactory,
    *,
    parameters: type[Any] | Mapping[str, Any] | None = None,
    label: str | None = None,
    task_of: Callable[[Any], str] | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
    timeout: float | None = None,
    replay: Literal["never", "safe"] = "safe",
) -> AgentTool:
    """A tool that runs a child agent on the call's task (see the module documentation).

    Args:
        name: the tool's name, as the model calls it.
        description: what the sub-agent does, for the model.
        agent_factory: ``(tool_call_id, params) ->`` a ``pt.Agent``, or an async context
            manager yielding one; called once per call (and again when a durable parent
            re-runs an interrupted call).
        parameters: the tool's parameters (an attrs class or a JSON schema); default
            :data:`TASK_PARAMETERS` (``{"task": str}``).
        label: the tool's label (default: ``name``).
        task_of: ``params -> str``, the child's prompt; default ``params["task"]`` (a dict)
            or ``params.task`` (an attrs instance).
        max_depth: how many sub-agents may be nested; a call past it is an error result.
        timeout: the tool's ``timeout`` (seconds): past it the child is cancelled.
        replay: the tool's ``replay`` for durable sessions (see the module documentation).

    Raises:
        ValueError: ``max_depth`` is below 1 or above :data:`MAX_DEPTH_LIMIT`; ``replay`` is
            neither "never" nor "safe".
        TypeError: ``agent_factory`` is not a function, or is an ``async def`` one (its
            coroutine is neither an agent nor a context manager: write a plain function, or
            an ``@asynccontextmanager`` one); ``task_of`` is not a function; ``max_depth``
            is not an int.
    """
    if not callable(agent_factory) or is_async_callable(agent_factory):
        raise TypeError(
            f"subagent_tool {name!r}: agent_factory must be a plain function returning a "
            "pt.Agent or an async context manager yielding one (an @asynccontextmanager "
            f"function, for async set-up), got {describe(agent_factory)}"
        )
    if task_of is not None and not callable(task_of):
        raise TypeError(
            f"subagent_tool {name!r}: task_of must be a function of the call's parameters "
            f"returning the child's prompt, got {describe(task_of)}"
        )
    if type(max_depth) is not int:
        raise TypeError(f"subagent_tool {name!r}: max_depth must be an int, got {max_depth!r}")
    if not 1 <= max_depth <= MAX_DEPTH_LIMIT:
        raise ValueError(
            f"subagent_tool {name!r}: max_depth must be 1 to {MAX_DEPTH_LIMIT} (deeper "
            f"forwarded events would exceed the wire format's nesting limit), got {max_depth!r}"
        )
    if task_of is None and not _has_task_field(parameters):
        raise ValueError(
            f"subagent_tool {name!r}: its parameters have no 'task' field to prompt the child "
            "with: add one, or pass task_of=(params -> the child's prompt)"
        )
    read_task = task_of if task_of is not None else _task_field

    async def execute(tool_call_id: str, params: Any, on_update: OnUpdate) -> ToolResult:
        depth = _DEPTH.get() + 1
        if depth > max_depth:
            return _failure(
                f"Sub-agent {name} was not run: the depth limit of {max_depth} nested "
                "sub-agents is reached; do the task here instead",
                depth,
            )
        token = _DEPTH.set(depth)
        try:
            made = agent_factory(tool_call_id, params)
            task = read_task(params)
            if isinstance(made, Agent):
                return await _run_child(name, made, task, depth, on_update, resume=False)
            if not isinstance(made, AbstractAsyncContextManager):
                raise TypeError(
                    f"agent_factory returned {type(made).__name__}, expected a pt.Agent or an "
                    "async context manager yielding one"
                )
            async with made as child:
                return await _run_child(name, child, task, depth, on_update, resume=True)
        except Exception as exc:  # the child's failure is this call's result, never the parent's
            return _failure(f"Sub-agent {name} failed: {exception_text(exc)}", depth)
        finally:
            _DEPTH.reset(token)

    return AgentTool(
        name,
        label or name,
        description,
        parameters if parameters is not None else TASK_PARAMETERS,
        execute,
        timeout=timeout,
        replay=replay,
    )


async def _run_child(
    name: str, child: Agent, task: str, depth: int, on_update: OnUpdate, *, resume: bool
) -> ToolResult:
    """Prompt ``child`` with ``task`` (or, with ``resume``, continue a child whose transcript
    has the task already), its events forwarded through ``on_update``; the result.
    Cancellation reaches the child's run where it is (it closes in pi's aborted shape) and
    propagates."""
    if not isinstance(child, Agent):
        raise TypeError(f"the async context manager gave {type(child).__name__}, not a pt.Agent")
    from .wire import to_json  # the wire layer loads on first use

    start = _task_index(child.state.messages, task) if resume else None
    # this call's messages: those a run before a crash left (resumed), then those this run
    # ends, taken from its events (a compaction rewrites the transcript under an index)
    run: list[AgentMessage] = list(child.state.messages[start:]) if start is not None else []
    spent = total_usage(run)

    async def forward(event: AgentEvent) -> None:
        details = {"subagent": {"depth": depth, "event": _event_json(event, to_json)}}
        usage = None  # spent so far, on the updates that change it (see the module docstring)
        if isinstance(event, MessageEnd):
            message = event.message
            run.append(message)
            if (
                isinstance(message, AssistantMessage | ToolResultMessage)
                and message.usage is not None
            ):
                usage = _add(Usage(), _add(spent, message.usage))  # a copy of the total
        elif isinstance(event, CompactionEnd) and event.usage is not None:  # its summary's
            usage = _add(Usage(), _add(spent, event.usage))
        await on_update(ToolResult([], details=details, usage=usage))

    unsubscribe = child.subscribe(forward)
    try:
        if start is None:
            await child.prompt(task)
        elif not _answered(child.state.messages):
            tail = child.state.messages[-1]
            if isinstance(tail, AssistantMessage):
                await child.prompt(RESUME_TEXT)
            else:
                await child.continue_()
    finally:
        unsubscribe()
    return _result(name, child, run, depth, spent)


def _event_json(event: AgentEvent, to_json: Callable[[Any], Any]) -> dict[str, Any]:
    """A child event as forwarded: its pi JSON (a ``message_update`` trimmed); an event the
    wire format cannot write (none today) is forwarded as its type alone rather than ending
    the child's run."""
    if isinstance(event, MessageUpdate):
        return _update_json(event, to_json)
    try:
        shown: dict[str, Any] = to_json(event)
    except Exception:
        return {"type": event.type}
    return shown


def _update_json(event: MessageUpdate, to_json: Callable[[Any], Any]) -> dict[str, Any]:
    """A child's ``message_update`` as forwarded: pi's JSON without the partial message (pi's
    has it twice, so forwarding a long streamed answer would cost O(length) per delta):
    ``{"type": "message_update", "assistantMessageEvent": {"type", "contentIndex", and
    "delta", "content" or "toolCall"}}``. ``message_start``/``message_end`` carry the whole
    message."""
    inner = event.assistant_message_event
    shown: dict[str, Any] = {"type": inner.type}
    if isinstance(inner, TextStart | ThinkingStart | ToolCallStart):
        shown["contentIndex"] = inner.content_index
    elif isinstance(inner, TextDelta | ThinkingDelta | ToolCallDelta):
        shown["contentIndex"], shown["delta"] = inner.content_index, inner.delta
    elif isinstance(inner, TextEnd | ThinkingEnd):
        shown["contentIndex"], shown["content"] = inner.content_index, inner.content
    elif isinstance(inner, ToolCallEnd):
        shown["contentIndex"], shown["toolCall"] = inner.content_index, to_json(inner.tool_call)
    return {"type": "message_update", "assistantMessageEvent": shown}


def _result(
    name: str, child: Agent, run: Sequence[AgentMessage], depth: int, usage: Usage
) -> ToolResult:
    """The call's result from the child's messages for this call: its last answer's text (an
    error result when it did not answer), and ``usage``, its total (summaries included)."""
    last = run[-1] if run else None
    details: dict[str, Any] = {"subagent": {"depth": depth, "messages": len(run)}}
    if child.output_type is not None:
        return _output_result(name, child, details, usage)
    if not _answered(run):
        reason = child.state.error_message
        waiting = child.state.pending_approvals
        if reason is None and waiting:  # nobody is asked: a child's run cannot wait for one
            calls = ", ".join(f"{call.name} {call.id!r}" for call in waiting)
            reason = (
                f"its tool calls wait for a person's approval ({calls}), which a sub-agent "
                "cannot ask for; give the child tools that need no approval"
            )
        if reason is None and isinstance(last, AssistantMessage):
            reason = last.error_message or f"it stopped with {last.stop_reason!r}"
        text = f"Sub-agent {name} did not answer: {reason or 'its run ended without an answer'}"
        return ToolResult([TextContent(text)], details=details, is_error=True, usage=usage)
    assert isinstance(last, AssistantMessage)
    answer = "".join(block.text for block in last.content if isinstance(block, TextContent))
    return ToolResult([TextContent(answer)], details=details, usage=usage)


def _output_result(name: str, child: Agent, details: dict[str, Any], usage: Usage) -> ToolResult:
    """The result of a child that asked for structured output (``output_type``): its value,
    as JSON, is the result's ``structured_content`` and its text (the child's last message is
    its output tool's call, not an answer); an error result when it gave none."""
    value = child.state.output
    if value is None:
        why = child.state.error_message or "its run ended without a valid output"
        text = f"Sub-agent {name} gave no structured output: {why}"
        return ToolResult([TextContent(text)], details=details, is_error=True, usage=usage)
    data = output_json(value)
    text = json.dumps(data, ensure_ascii=False)
    return ToolResult([TextContent(text)], details=details, usage=usage, structured_content=data)


def total_usage(messages: Sequence[AgentMessage]) -> Usage:
    """What ``messages`` spent: every assistant message's usage plus what tool results report
    (a nested sub-agent's total)."""
    total = Usage()
    for message in messages:
        if isinstance(message, AssistantMessage | ToolResultMessage) and message.usage is not None:
            _add(total, message.usage)
    return total


def _add(total: Usage, usage: Usage) -> Usage:
    """Add ``usage`` to ``total`` (in place); ``total``."""
    total.input += usage.input
    total.output += usage.output
    total.cache_read += usage.cache_read
    total.cache_write += usage.cache_write
    total.total_tokens += usage.total_tokens
    cost, spent = total.cost, usage.cost
    cost.input += spent.input
    cost.output += spent.output
    cost.cache_read += spent.cache_read
    cost.cache_write += spent.cache_write
    cost.total += spent.total
    return total


def _answered(messages: Sequence[AgentMessage]) -> bool:
    """Whether the transcript ends with a finished answer (no tool calls left to run)."""
    if not messages:
        return False
    last = messages[-1]
    return (
        isinstance(last, AssistantMessage)
        and last.stop_reason in ("stop", "length")
        and not last.tool_calls
    )


def _task_index(messages: Sequence[AgentMessage], task: str) -> int | None:
    """Where a resumed child's transcript holds this task's prompt (the last user message with
    exactly its text); None for a child that has not seen it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, UserMessage) and _text(message) == task:
            return index
    return None


def _text(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def _has_task_field(parameters: type[Any] | Mapping[str, Any] | None) -> bool:
    """Whether the default task (a ``task`` field) can be read from calls of ``parameters``."""
    if parameters is None:
        return True  # TASK_PARAMETERS
    if isinstance(parameters, Mapping):
        properties = parameters.get("properties")
        return isinstance(properties, Mapping) and "task" in properties
    return attrs.has(parameters) and "task" in attrs.fields_dict(parameters)


def _task_field(params: Any) -> str:
    """The default task of a call: ``params["task"]``, or the ``task`` field of an attrs
    instance."""
    if isinstance(params, Mapping):
        task = params["task"]
    elif attrs.has(type(params)):
        task = attrs.asdict(params, recurse=False)["task"]
    else:
        raise TypeError(f"cannot find the task in {type(params).__name__}: pass task_of=")
    if not isinstance(task, str):
        raise TypeError(f"the task must be a text, got {type(task).__name__}")
    return task


def _failure(text: str, depth: int) -> ToolResult:
    return ToolResult([TextContent(text)], details={"subagent": {"depth": depth}}, is_error=True)
