"""One run of the agent loop: pi's double loop, with Trio's cancellation.

Inner loop: an assistant turn, its tool batch, then steering messages; outer loop: follow-ups
once the agent would stop. The run's state is three things: its :class:`Phase`, its
:class:`Transcript` (which message is ended, open or only taken) and, while tools run, the
:class:`ToolBatch` (one slot per call). Each event is applied to that state, and to the sink's
own state (``sink.apply``, when the sink has one), before it is sent; so wherever a
cancellation lands, :mod:`._close` can complete the transcript to pi's aborted shape
synchronously and only then deliver the closing events, in one shielded scope bounded by
``config.close_timeout``.

Failures of the application's callbacks (the event sink, a steering poll,
``should_stop_after_turn``) end the run the same way, with stop_reason "error": the run's own
cancel scope is cancelled, so the failure travels as a cancellation through whatever is running
(a tool batch nursery included) and never as an exception group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from logging import ERROR
from typing import Any, Literal

import attrs
import trio

from .._callbacks import call_maybe_async, exception_text, is_awaitable
from .._groups import plain_exception
from .._logging import log_failure, loop_logger
from .._telemetry import RunTracing, start_run, tracing_on
from ..events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from ..messages import (
    AgentMessage,
    AssistantMessage,
    Tool,
    ToolResultMessage,
)
from ..providers import stream_simple
from ..tools import AgentContext, AgentTool, ToolBatch
from ._close import close_run
from ._config import (
    AgentLoopConfig,
    EventSink,
    FinishTurnDecision,
    TurnContext,
)
from ._phase import Phase
from ._request import bare_message
from ._response import assistant_turn
from ._transcript import Transcript

__all__ = ["LENGTH_TOOL_TEXT", "run"]

# pt.Agent's sink extends the EventSink protocol under names no application sink uses (a sink
# of the application's own may well have a ``deliver``, a ``closing`` or a ``cancel_scope``):
_LENT_SCOPE = "_pi_trio_run_scope"  # the cancel scope it entered around the run, lent to it
_DELIVER = "_pi_trio_deliver"  # its synchronous-first send: None, or an awaitable to finish
_CLOSING = "_pi_trio_closing"  # told when the close-out begins

LENGTH_TOOL_TEXT = (
    'Tool call "{name}" was not executed: the response was cut off at the output token limit '
    '(stop reason "length"), so its arguments may be incomplete. Call the tool again with '
    "complete arguments."
)


def _no_apply(event: AgentEvent) -> None:
    pass


class _Run:
    """One run's state (phase, transcript, batch) and the algorithm that advances it."""

    # slots: one run per running agent, and thousands of agents wait at once
    __slots__ = (
        "batch", "config", "context", "deliver", "failure", "interrupted", "model", "options",
        "phase", "reply", "response_error", "scope", "sink", "sink_apply", "stream_fn",
        "tool_specs", "tools", "tracing", "transcript", "turn_results",
    )  # fmt: skip

    def __init__(self, context: AgentContext, config: AgentLoopConfig, sink: EventSink) -> None:
        self.context = context
        self.config = config
        self.sink = sink
        # a sink's synchronous-first step (pt.Agent's): None when the event is delivered, else
        # an awaitable to finish it; any other sink's send() is that awaitable every time
        self.deliver: Callable[[AgentEvent], Awaitable[None] | None] = (
            getattr(sink, _DELIVER, None) or sink.send
        )
        self.sink_apply: Callable[[AgentEvent], None] = getattr(sink, "apply", None) or _no_apply
        self.stream_fn = config.stream_fn or stream_simple
        self.tools: dict[str, AgentTool] = {}
        self.tool_specs: tuple[Tool, ...] = ()
        self._use_tools(context.tools)
        incremental = config.convert_to_llm is None and config.transform_context is None
        self.transcript = Transcript(context.messages, incremental_llm=incremental)
        self.phase = Phase.BETWEEN_TURNS
        self.batch: ToolBatch | None = None
        self.reply: AssistantMessage | None = None  # the response after which the run ends
        # the turn's results once its batch is done (None: no batch, or not done yet)
        self.turn_results: list[ToolResultMessage] | None = None
        self.model = config.model  # prepare_next_turn may change it for later requests
        self.options = config.stream_options
        self.failure: BaseException | None = None
        self.response_error: Exception | None = None  # behind the last response's "error"
        self.interrupted: AgentEvent | None = None  # applied, but its send was cancelled
        self.tracing: RunTracing | None = None  # its OpenTelemetry spans, when tracing is on
        # pt.Agent lends the scope abort() cancels: the run fails by cancelling it, no 2nd scope
        # (under a private name: a user's sink may well have a ``cancel_scope`` of its own)
        self.scope: trio.CancelScope = getattr(sink, _LENT_SCOPE, None) or trio.CancelScope()

    def _use_tools(self, tools: Sequence[AgentTool]) -> None:
        """The tools the next requests offer and their calls run (from the run's start, or a
        ``prepare_next_turn`` that replaced them)."""
        self.tools = {tool.name: tool for tool in tools}
        self.tool_specs = tuple(tool.spec for tool in tools)

    # --- plumbing ----------------------------------------------------------------------------

    def apply(self, event: AgentEvent) -> None:
        """State first: the run's transcript, then the sink's own state."""
        self.transcript.apply(event)
        self.sink_apply(event)

    def tell_closing(self) -> None:
        """Tell the sink the close-out begins (pt.Agent's: blocking channels stop waiting for
        their readers); looked up now, not kept: a run closes once."""
        closing = getattr(self.sink, _CLOSING, None)
        if closing is not None:
            closing()

    def emit_now(self, event: AgentEvent) -> Awaitable[None] | None:
        """Apply ``event``, then deliver it as far as that goes synchronously: None when it is
        delivered, else an awaitable the caller must await (a listener waits, or one failed:
        awaiting it ends the run). No coroutine per event when the listeners are plain
        functions; ``await run.emit(event)`` is the same in one step."""
        cls = type(event)
        if cls is MessageEnd:
            self.transcript.end(event.message)  # type: ignore[union-attr]
        elif cls is MessageStart:
            self.transcript.start(event.message)  # type: ignore[union-attr]
        self.sink_apply(event)
        try:
            pending = self.deliver(event)
        except Exception as exc:
            return self.fail(exc)
        except BaseException:
            if cls is not ToolExecutionUpdate:
                self.interrupted = event
            raise
        if pending is None:
            return None
        return self._finish_delivery(event, pending)

    async def _finish_delivery(self, event: AgentEvent, pending: Awaitable[None]) -> None:
        try:
            await pending
        except Exception as exc:
            await self.fail(exc)
        except BaseException:
            # a tool's progress cut short (by the tool's own timeout too) is not sent again:
            # the run may go on, and its tool_execution_end may follow
            if type(event) is not ToolExecutionUpdate:
                self.interrupted = event
            raise

    async def emit(self, event: AgentEvent) -> None:
        pending = self.emit_now(event)
        if pending is not None:
            await pending

    async def fail(self, exc: BaseException) -> None:
        """End the run with stop_reason "error": cancel our own scope and unwind."""
        if self.failure is None:
            self.failure = exc
            log_failure(loop_logger, ERROR, exc, "the run fails: %s", exception_text(exc))
        self.scope.cancel(reason=f"run failed: {exception_text(exc)}")
        await trio.lowlevel.checkpoint()  # raises Cancelled when we are inside our scope
        # not inside it (a shield, a from_thread system task): report the failure itself
        raise exc

    async def _hook(self, hook: Callable[..., Any], *args: Any) -> Any:
        try:
            return await call_maybe_async(hook, *args)
        except Exception as exc:
            await self.fail(exc)

    def bare_message(self, reason: Literal["error", "aborted"], text: str) -> AssistantMessage:
        """An assistant message with no content: a failure before or without a response."""
        return bare_message(self.model, reason, text)

    # --- the run -----------------------------------------------------------------------------

    def execute(
        self, prompts: Sequence[AgentMessage] | None
    ) -> Coroutine[Any, Any, list[AgentMessage]]:
        """The run as one coroutine to await. Untraced under a ``pt.Agent``, that is
        :meth:`_execute` itself: no wrapper frame, so an agent waiting mid-run holds (and an
        abort unwinds) fewer; the agent entered the scope it lent (``sink._pi_trio_run_scope``).
        Traced, the run's span starts with its first step: a coroutine closed unawaited leaves
        none open."""
        if not tracing_on():
            return self._scoped(prompts)
        return self._traced(prompts)

    def _scoped(
        self, prompts: Sequence[AgentMessage] | None
    ) -> Coroutine[Any, Any, list[AgentMessage]]:
        if self.scope is getattr(self.sink, _LENT_SCOPE, None):
            return self._execute(prompts)  # entered by the sink's owner: a failure unwinds there
        return self._in_own_scope(prompts)

    async def _in_own_scope(self, prompts: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        with self.scope:  # a failure cancels it (the run is closed by then): absorbed here
            return await self._execute(prompts)
        return self.transcript.new_messages

    async def _traced(self, prompts: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        tracing = self.tracing = start_run(self.model, self.options.session_id)
        if tracing is None:  # its tracer provider went away since execute()
            return await self._scoped(prompts)
        try:
            return await tracing.run(lambda: self._scoped(prompts))
        finally:
            tracing.end(self.transcript.messages, self.failure or self.response_error)

    async def _execute(self, prompts: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        try:
            self.transcript.take(prompts or ())
            await self.emit(AgentStart())
            await self._start_turn()
            await self._loop()
        except BaseException as exc:
            # Cancelled from the caller, a KeyboardInterrupt (or a bug): close, then let it out.
            if self.failure is None and isinstance(exc, Exception):
                self.failure = exc
                log_failure(loop_logger, ERROR, exc, "the run fails: %s", exception_text(exc))
            closing = close_run(self)  # None: delivered without a wait (the usual abort)
            if closing is not None:
                await closing
            if isinstance(exc, BaseExceptionGroup):
                # an application's nursery (a tool's, a stream's): its Cancelled or Ctrl-C, plain
                raise plain_exception(exc) from None
            raise
        if self.failure is not None:
            closing = close_run(self)
            if closing is not None:
                await closing
        return self.transcript.new_messages

    async def _start_turn(self) -> None:
        self.reply = None
        self.turn_results = None
        self.phase = Phase.STARTING
        await self.emit(TurnStart())
        if self.transcript.taken:
            await self._announce_taken()

    async def announce(self, message: ToolResultMessage) -> None:
        """Take a tool-result message into the transcript and send its start and end."""
        self.transcript.take((message,))
        pending = self.emit_now(MessageStart(message))
        if pending is not None:
            await pending
        pending = self.emit_now(MessageEnd(message))
        if pending is not None:
            await pending

    async def _poll(self, source: Callable[[], Any] | None) -> bool:
        """Take queued steering/follow-up messages; True when there were any."""
        if source is None:
            return False
        try:  # self._hook(source), inlined: one poll per turn
            taken = source()
            if is_awaitable(taken):
                taken = await taken
            messages = list(taken) if taken else ()
        except Exception as exc:  # a failing source, or one that returned no list
            await self.fail(exc)
        return self.transcript.take(messages)

    async def _loop(self) -> None:
        config = self.config
        first_turn = True
        pending = await self._poll(config.get_steering_messages)
        last_turn: TurnContext | None = None
        # the turn's context is built only for the hooks that are given it
        wants_turn = (
            config.finish_turn is not None
            or config.should_stop_after_turn is not None
            or config.prepare_next_turn is not None
        )
        continue_once = False  # finish_turn asked for one more request
        while True:
            more_tool_calls = True
            while more_tool_calls or pending:
                if first_turn:
                    first_turn = False
                    if pending:  # steering taken before the first request: announce it
                        await self._announce_taken()
                else:
                    if config.prepare_next_turn is not None and last_turn is not None:
                        await self._prepare_next_turn(last_turn, pending)
                    # self._start_turn(), inlined: one coroutine less per turn
                    self.reply = None
                    self.turn_results = None
                    self.phase = Phase.STARTING
                    delivering = self.emit_now(TurnStart())
                    if delivering is not None:
                        await delivering
                    if self.transcript.taken:
                        await self._announce_taken()
                pending = False

                # One schedule point per model call: an aborted run never calls the model, and
                # a run on an instant model with instant tools still lets deadlines and other
                # tasks in. Here, not in assistant_turn: what waits in the run queue meanwhile
                # is kept small (thousands of agents wait there at once): checkpoint() in its
                # two halves, so one frame less waits per agent (a waiting coroutine is ~230 B)
                await trio.lowlevel.cancel_shielded_checkpoint()
                await trio.lowlevel.checkpoint_if_cancelled()
                message = await assistant_turn(self)
                if message.stop_reason == "error" or message.stop_reason == "aborted":
                    if config.finish_turn is not None:  # a hard exit whatever it decides
                        await self._hook(config.finish_turn, self._turn(message, []))
                    self.phase = Phase.BETWEEN_TURNS
                    await self.emit(TurnEnd(message, []))
                    await self._end()
                    return

                tool_results: list[ToolResultMessage] = []
                more_tool_calls = False
                batch = self.batch
                if batch is not None:
                    refuse = None
                    if message.stop_reason == "length":
                        names = ", ".join(call.name for call in batch.calls)
                        refuse = LENGTH_TOOL_TEXT.format(name=names)
                    try:
                        await batch.run(refuse)
                    except Exception as exc:  # a hook of the batch itself (steering_signal)
                        await self.fail(exc)
                    tool_results = batch.messages
                    more_tool_calls = not batch.terminate
                    self.reply = None if more_tool_calls else message
                    self.turn_results = tool_results
                    self.phase = Phase.ANSWERED  # turn_end is next
                    # the batch is done with: nothing of it waits through the next checkpoint
                    self.batch = batch = None
                if wants_turn:
                    last_turn = self._turn(message, tool_results)
                decision: FinishTurnDecision = None
                if config.finish_turn is not None:
                    decision = await self._hook(config.finish_turn, last_turn)
                self.phase = Phase.BETWEEN_TURNS
                self.turn_results = None
                delivering = self.emit_now(TurnEnd(message, tool_results))
                if delivering is not None:
                    await delivering
                del tool_results  # kept by nothing through the next checkpoint
                if decision == "end":
                    await self._end()
                    return
                continue_once = decision == "continue"

                if config.should_stop_after_turn is not None and await self._hook(
                    config.should_stop_after_turn, last_turn
                ):
                    await self._end()
                    return
                if config.get_steering_messages is not None:
                    pending = await self._poll(config.get_steering_messages)
                if more_tool_calls or pending:
                    continue_once = False  # a request follows anyway

            if config.get_follow_up_messages is not None:
                pending = await self._poll(config.get_follow_up_messages)
            if pending:
                continue_once = False
            elif continue_once:
                continue_once = False  # one context-only turn, as finish_turn asked
            else:
                break
        await self._end()

    def _turn(self, message: AssistantMessage, results: list[ToolResultMessage]) -> TurnContext:
        return TurnContext(message, results, self.context, self.transcript.new_messages)

    async def _prepare_next_turn(self, turn: TurnContext, pending: bool) -> None:
        """pi 1.x's ``prepare_next_turn``: messages to add, model and thinking level."""
        config = self.config
        assert config.prepare_next_turn is not None
        update = await self._hook(config.prepare_next_turn, turn)
        if update is not None:
            self.transcript.take(list(update.messages))
            if update.model is not None:
                self.model = update.model
            if update.tools is not None:
                self._use_tools(update.tools)
                self.context = attrs.evolve(self.context, tools=list(update.tools))
            if update.thinking_level is not None:
                level = None if update.thinking_level == "off" else update.thinking_level
                self.options = attrs.evolve(self.options, reasoning=level)
        if not pending:  # preparing may take a while: steering queued meanwhile goes in now
            await self._poll(config.get_steering_messages)

    async def _announce_taken(self) -> None:
        transcript = self.transcript
        while transcript.taken:
            message = transcript.next_taken()
            await self.emit(MessageStart(message))
            await self.emit(MessageEnd(message))

    async def _end(self) -> None:
        self.phase = Phase.ENDED
        await self.emit(AgentEnd(self.transcript.new_messages, error=self.response_error))


def run(
    prompts: Sequence[AgentMessage] | None,
    context: AgentContext,
    config: AgentLoopConfig,
    sink: EventSink,
) -> Coroutine[Any, Any, list[AgentMessage]]:
    """The loop on ``context`` (``prompts`` first, or continue when None), to await; see
    :func:`pi_trio.run_agent_loop`. A plain function: no frame of its own while it runs."""
    return _Run(context, config, sink).execute(prompts)
