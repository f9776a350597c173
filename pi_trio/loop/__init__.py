"""The stateless agent loop: pi's double loop on Trio.

``run_agent_loop`` / ``run_agent_loop_continue`` run in the caller's task and send every event
to a sink (``run_loop`` is either, as a coroutine to await); ``agent_loop`` /
``agent_loop_continue`` hand the events out through a memory channel. One cancel scope is the
run's abort source: its own (``cancel_scope=``, which the run enters, as ``pt.Agent`` passes
the scope ``abort()`` cancels) or any scope around the call (``move_on_after``, a nursery
shutting down). Either way the run closes its transcript in pi's aborted shape and delivers the
closing events within ``config.close_timeout``; a cancellation from around the call then
propagates. Failures of the model, the tools or the hooks never raise: they are recorded in
the transcript.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import trio

from .._errors import ContinueError
from .._groups import plain_exception
from ..events import AgentEvent
from ..messages import AgentMessage
from ..tools import AgentContext
from ._compact import compact_context
from ._config import (
    AgentLoopConfig,
    ConvertToLlm,
    FinishTurn,
    FinishTurnDecision,
    GetApiKey,
    GetMessages,
    PrepareNextTurn,
    PrepareRequest,
    PrepareRequestContext,
    RequestUpdate,
    ShouldStopAfterTurn,
    ShouldStopAfterTurnContext,
    SteeringPolicy,
    ToolExecution,
    TransformContext,
    TurnContext,
    TurnUpdate,
)
from ._run import LENGTH_TOOL_TEXT, run
from ._sink import EventSink, RunSink
from ._transcript import TranscriptView, default_convert_to_llm

__all__ = [
    "LENGTH_TOOL_TEXT",
    "AgentLoopConfig",
    "ConvertToLlm",
    "EventSink",
    "FinishTurn",
    "FinishTurnDecision",
    "GetApiKey",
    "GetMessages",
    "PrepareNextTurn",
    "PrepareRequest",
    "PrepareRequestContext",
    "RequestUpdate",
    "RunSink",
    "ShouldStopAfterTurn",
    "ShouldStopAfterTurnContext",
    "SteeringPolicy",
    "ToolExecution",
    "TranscriptView",
    "TransformContext",
    "TurnContext",
    "TurnUpdate",
    "agent_loop",
    "agent_loop_continue",
    "compact_context",
    "default_convert_to_llm",
    "run_agent_loop",
    "run_agent_loop_continue",
    "run_loop",
]


async def run_agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    sink: EventSink,
    *,
    cancel_scope: trio.CancelScope | None = None,
) -> list[AgentMessage]:
    """Add ``prompts`` to the transcript and run until the agent stops; return the new messages.

    ``context.messages`` is the live transcript: the run appends to it before sending each
    event, so it is complete and valid when this returns and when ``Cancelled`` propagates.

    Args:
        prompts: the messages that start the run.
        context: the system prompt, the live transcript and the tools.
        config: the model, the hooks and the options.
        sink: where the events go: any :class:`EventSink` (a memory channel's send end), or a
            :class:`RunSink` that keeps state of its own.
        cancel_scope: the run's abort switch: a fresh ``trio.CancelScope`` that the run
            enters; cancel it (from any task, before or during the run) to abort the run,
            which then returns normally. A failure of the run's callbacks cancels it too.
            None: the run makes its own.

    Cancellation from an enclosing scope closes the run in pi's aborted shape, delivers the
    closing events within ``config.close_timeout``, then propagates.
    """
    return await run(list(prompts), context, config, sink, cancel_scope)


def run_loop(
    prompts: Sequence[AgentMessage] | None,
    context: AgentContext,
    config: AgentLoopConfig,
    sink: EventSink,
    *,
    cancel_scope: trio.CancelScope | None = None,
) -> Coroutine[Any, Any, list[AgentMessage]]:
    """The run of :func:`run_agent_loop` (``prompts`` first) or, with ``prompts=None``, of
    :func:`run_agent_loop_continue`, as a coroutine made at the call, to await at once.

    For a caller that runs many agents (``pt.Agent`` uses it): the run holds no frame of
    this function while it waits. Unlike those two, the run's state is built here, and the
    continue checks (a non-empty transcript whose last message is not the assistant's) are
    the caller's to make. Cancellation is as in :func:`run_agent_loop`. A coroutine closed or
    dropped before it is awaited ran nothing: no event, no transcript change, no tracing span.
    """
    return run(None if prompts is None else list(prompts), context, config, sink, cancel_scope)


def _check_continuable(messages: Sequence[AgentMessage]) -> None:
    if not messages:
        raise ContinueError("Cannot continue: no messages in context")
    if messages[-1].role == "assistant":
        raise ContinueError("Cannot continue from message role: assistant")


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    sink: EventSink,
    *,
    cancel_scope: trio.CancelScope | None = None,
) -> list[AgentMessage]:
    """Run from the transcript as it is (a retry); otherwise as :func:`run_agent_loop`.

    Raises:
        ContinueError: the transcript is empty or ends with the assistant's message (pi's
            texts).
    """
    _check_continuable(context.messages)
    return await run(None, context, config, sink, cancel_scope)


@asynccontextmanager
async def _channel_run(
    prompts: Sequence[AgentMessage] | None,
    context: AgentContext,
    config: AgentLoopConfig,
    max_buffer_size: float,
) -> AsyncIterator[trio.MemoryReceiveChannel[AgentEvent]]:
    send, receive = trio.open_memory_channel[AgentEvent](max_buffer_size)

    async def runner() -> None:
        try:
            await run(prompts, context, config, send)
        finally:
            send.close()  # not ``async with send``: its checkpoint would turn an exception on
            # its way out (KeyboardInterrupt) into the Cancelled of the block's exit

    body_exc: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner)
            try:
                yield receive
            except BaseException as exc:
                body_exc = exc  # re-raised below, outside the nursery: not wrapped in a group
            finally:
                nursery.cancel_scope.cancel(reason="agent_loop() block left")
                receive.close()
    except BaseExceptionGroup as group:
        # the runner's Cancelled from an enclosing scope, or a KeyboardInterrupt from a tool:
        # plain, never a group
        plain = plain_exception(group)
        if body_exc is None or (
            isinstance(body_exc, trio.Cancelled) and not isinstance(plain, trio.Cancelled)
        ):
            body_exc = plain  # what the runner raised wins over the Cancelled it caused
    if body_exc is not None:
        raise body_exc


def agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    *,
    max_buffer_size: float = 256,
) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[AgentEvent]]:
    """``async with agent_loop(...) as events: async for event in events: ...``

    The run goes on in a task of the block's own nursery, sending into a memory channel of
    ``max_buffer_size`` (it waits when the reader falls that far behind). The channel closes
    after ``agent_end``. Leaving the block early aborts the run (the transcript is closed in
    pi's aborted shape); an exception in the block propagates after that.
    """
    return _channel_run(list(prompts), context, config, max_buffer_size)


def agent_loop_continue(
    context: AgentContext, config: AgentLoopConfig, *, max_buffer_size: float = 256
) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[AgentEvent]]:
    """Like :func:`agent_loop`, continuing from the transcript (see
    :func:`run_agent_loop_continue`)."""
    _check_continuable(context.messages)
    return _channel_run(None, context, config, max_buffer_size)
