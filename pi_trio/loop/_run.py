"""One run of the agent loop: pi's double loop, with Trio's cancellation.

Inner loop: an assistant turn, its tool batch, then steering messages; outer loop: follow-ups
once the agent would stop (:meth:`_Run._loop`, which reads like pi's ``runLoop``). The run's
state is its :mod:`phase <._phase>` (which carries the batch or the answered turn it is about)
and its :class:`Transcript`; every event goes through the :class:`Emitter`, which applies it
to that state, and to the sink's, before it delivers it. So wherever a cancellation lands,
:func:`closing_events` can complete the transcript to pi's aborted shape synchronously, and
only then are the closing events delivered, in one shielded scope bounded by
``config.close_timeout``.

With structured output (``config.output_tool``) an :class:`OutputGuard` adds the output tool to
the requests, has its say in whether the model is asked again after each turn (the batch's
step, :meth:`_Run._run_tools`), puts its nudge first in the steering poll, and, once the attempts
are used up, stands in for the next request with pi's failed response.

Failures of the application's callbacks (the event sink, a steering poll,
``should_stop_after_turn``) end the run the same way, with stop_reason "error": the run's own
cancel scope is cancelled, so the failure travels as a cancellation through whatever is running
(a tool batch nursery included) and never as an exception group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import attrs
import trio

from .._callbacks import call_maybe_async, hook_answer
from .._groups import plain_exception
from .._telemetry import RunTracing, start_run, tracing_on
from ..events import AgentEnd, AgentEvent, AgentStart, MessageEnd, MessageStart, TurnEnd, TurnStart
from ..messages import AgentMessage, AssistantMessage, ToolCall, ToolResultMessage
from ..providers import stream_simple
from ..tools import AgentContext, ToolBatch, last_output
from ._awaiting import unanswered_calls
from ._close import closing_events
from ._compact import Compactor
from ._config import AgentLoopConfig, FinishTurnDecision, GetMessages, TurnContext, TurnUpdate
from ._emit import Emitter
from ._output import OutputGuard, ending_results
from ._phase import (
    AWAITING,
    BETWEEN_TURNS,
    ENDED,
    ENDING,
    REQUESTING,
    STREAMING,
    Answered,
    Phase,
    RunningTools,
)
from ._request import TurnSetup, build_request
from ._response import bare_message, settled_message, stream_response
from ._sink import EventSink
from ._transcript import Transcript

__all__ = ["LENGTH_TOOL_TEXT", "run"]

LENGTH_TOOL_TEXT = (
    'Tool call "{name}" was not executed: the response was cut off at the output token limit '
    '(stop reason "length"), so its arguments may be incomplete. Call the tool again with '
    "complete arguments."
)


_FAILED = frozenset({"error", "aborted"})
"""The stop reasons of a response that failed: its tool calls never run."""


class _Run:
    """One run's state (phase, transcript, what its requests are made of) and the algorithm
    that advances it."""

    # thousands of agents may be mid-run at once
    __slots__ = (
        "compactor", "config", "emitter", "get_steering", "hooks_see_turns", "open_calls",
        "output", "phase", "respond", "response_error", "setup", "stream_fn", "tracing",
        "transcript",
    )  # fmt: skip

    def __init__(
        self,
        context: AgentContext,
        config: AgentLoopConfig,
        sink: EventSink,
        cancel_scope: trio.CancelScope | None,
    ) -> None:
        self.config = config
        incremental = config.convert_to_llm is None and config.transform_context is None
        self.transcript = Transcript(context.messages, incremental_llm=incremental)
        scope = cancel_scope if cancel_scope is not None else trio.CancelScope()
        self.emitter = Emitter(sink, self.transcript, scope, config.close_timeout)
        options = config.stream_options
        self.get_steering: GetMessages | None = config.get_steering_messages
        self.output: OutputGuard | None = None  # structured output, when asked for
        if config.output_tool is not None:
            self.output = OutputGuard(config.output_tool, config.output_retries, self.get_steering)
            self.get_steering = self.output.poll_steering  # a nudge after a text answer
            context, options = self.output.offer(context, options)
        self.setup = TurnSetup(context, config.model, options)
        self.stream_fn = config.stream_fn or stream_simple
        self.phase: Phase = BETWEEN_TURNS  # set in this class only, before the event it starts
        self.hooks_see_turns = (
            config.finish_turn is not None
            or config.should_stop_after_turn is not None
            or config.prepare_next_turn is not None
        )
        self.response_error: Exception | None = None  # behind the last response's "error"
        self.tracing: RunTracing | None = None  # its OpenTelemetry spans, when tracing is on
        self.compactor: Compactor | None = None
        # the turn's request step, with compaction around it when on (a plain function of the
        # run: a bound method kept on the run would make a reference cycle of every run)
        self.respond: Callable[[_Run], Awaitable[AssistantMessage]] = _Run._respond
        if config.compaction is not None:
            self.compactor = Compactor(config.compaction, config, self.emitter)
            self.respond = _Run._respond_compacted
        # a continue run with decisions: the calls that waited for them, run in its first turn
        self.open_calls: tuple[AssistantMessage, list[ToolCall]] | None = None
        if config.tool_decisions is not None:
            self.open_calls = unanswered_calls(context.messages)
            if self.open_calls is not None:
                self.respond = _Run._answer_open_calls

    # --- the run -----------------------------------------------------------------------------

    def execute(
        self, prompts: Sequence[AgentMessage] | None
    ) -> Coroutine[Any, Any, list[AgentMessage]]:
        """The run as one coroutine to await. Traced, the run's span starts with its first
        step: a coroutine closed unawaited leaves none open."""
        if not tracing_on():
            return self._execute(prompts)
        return self._traced(prompts)

    async def _traced(self, prompts: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        tracing = self.tracing = start_run(self.setup.model, self.setup.options.session_id)
        if tracing is None:  # its tracer provider went away since execute()
            return await self._execute(prompts)
        try:
            return await tracing.run(lambda: self._execute(prompts))
        finally:
            tracing.end(self.transcript.messages, self.emitter.failure or self.response_error)

    async def _execute(self, prompts: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        """pi's ``runAgentLoop``: the prompts in the first turn, then :meth:`_loop`; inside the
        run's cancel scope, which a failure cancels (absorbed here once the run is closed)."""
        emitter = self.emitter
        entered = False
        try:
            with emitter.scope:
                entered = True
                try:
                    self.transcript.take(prompts or ())
                    await emitter.emit(AgentStart())
                    await self._start_turn(None, pending=False)
                    await self._announce_taken()
                    await self._loop()
                except BaseException as exc:
                    # Cancelled (an abort, the caller's deadline, a failure), a KeyboardInterrupt
                    # or a bug: close the run, then let it out, plain
                    if isinstance(exc, Exception):
                        emitter.note_failure(exc)
                    await self._close()
                    if isinstance(exc, BaseExceptionGroup):
                        raise plain_exception(exc) from None
                    raise
                if emitter.failure is not None:  # its cancellation was swallowed by a callback
                    await self._close()
        except RuntimeError as exc:
            if entered:
                raise
            raise RuntimeError(
                "cancel_scope= takes a fresh trio.CancelScope, which the run enters: this one "
                "was entered already (a scope serves one run)"
            ) from exc
        return self.transcript.new_messages

    async def _loop(self) -> None:
        """pi's ``runLoop``: turns while the model calls tools or messages are pending (steering
        first), then follow-ups once the agent would stop."""
        config = self.config
        first_turn = True
        # calls that waited for decisions are answered first: a message queued meanwhile goes
        # after their results (a user message between tool results breaks the transcript)
        pending = False
        if self.open_calls is None:
            pending = await self._poll(self.get_steering)
        turn: TurnContext | None = None  # the last turn, built for the hooks given it
        continue_once = False  # finish_turn asked for one more request
        while True:
            more_tool_calls = True
            while more_tool_calls or pending:
                if not first_turn:
                    await self._start_turn(turn, pending)
                first_turn = False
                if self.transcript.taken:
                    await self._announce_taken()
                pending = False
                # one schedule point per model call: an aborted run never calls the model, and
                # instant models and tools still let deadlines and other tasks in (checkpoint()
                # in its two halves: thousands of agents wait here, one frame less each)
                await trio.lowlevel.cancel_shielded_checkpoint()
                await trio.lowlevel.checkpoint_if_cancelled()
                message = await self.respond(self)
                tool_results, more_tool_calls = await self._run_tools(message)
                if self.hooks_see_turns:
                    turn = TurnContext(
                        message, tool_results, self.setup.context, self.transcript.new_messages
                    )
                decision = await self._end_turn(message, tool_results, turn)
                if await self._stops(message, decision, turn):
                    await self._end()
                    return
                continue_once = decision == "continue"
                pending = await self._poll(self.get_steering)
                if more_tool_calls or pending:
                    continue_once = False  # a request follows anyway
            pending = await self._poll(config.get_follow_up_messages)
            if not pending and not continue_once:
                break
            continue_once = False
        await self._end()

    # --- the steps of a turn -----------------------------------------------------------------

    async def _stops(
        self, message: AssistantMessage, decision: FinishTurnDecision, turn: TurnContext | None
    ) -> bool:
        """Whether the run ends after this turn: its response failed, ``finish_turn`` said
        "end", tool calls wait for a person's decision, or ``should_stop_after_turn``."""
        if message.stop_reason in _FAILED or decision == "end" or self.phase is AWAITING:
            return True
        should_stop = self.config.should_stop_after_turn
        return should_stop is not None and bool(await self._hook(should_stop, turn))

    async def _start_turn(self, last: TurnContext | None, pending: bool) -> None:
        """``turn_start``; after a turn (``last``), pi 1.x's ``prepare_next_turn`` first."""
        if last is not None and self.config.prepare_next_turn is not None:
            await self._prepare_next_turn(last, pending)
        self.phase = REQUESTING
        delivering = self.emitter.emit_nowait(TurnStart())
        if delivering is not None:
            await delivering

    async def _announce_taken(self) -> None:
        """``message_start`` and ``message_end`` of every message taken into the transcript
        and not announced yet (prompts, queued messages, tool results), in order."""
        transcript = self.transcript
        emit_nowait = self.emitter.emit_nowait
        while transcript.taken:
            message = transcript.next_taken()
            for event in (MessageStart(message), MessageEnd(message)):
                delivering = emit_nowait(event)
                if delivering is not None:
                    await delivering

    def _announce(self, message: ToolResultMessage) -> Awaitable[None]:
        """The batch's write-back: take a tool result, then announce it (await at once)."""
        self.transcript.take((message,))
        return self._announce_taken()

    async def _respond(self) -> AssistantMessage:
        """The model's response to the transcript: requested, streamed, settled as the turn's
        message (the phase says what comes next before its ``message_end`` is sent)."""
        final: AssistantMessage | None = None
        failure: Exception | None = None
        try:
            request = await build_request(self.config, self.setup, self.transcript, self.tracing)
        except Exception as exc:
            failure = exc
        else:
            self.phase = STREAMING
            final, failure = await stream_response(self.emitter, self.stream_fn, request)
        partial = self.transcript.open if self.phase is STREAMING else None
        message = settled_message(final, failure, partial, self.setup.model)
        self.response_error = failure if message.stop_reason == "error" else None
        if self.tracing is not None:
            self.tracing.end_chat(message, failure)
        self.phase = self._after(message)
        if partial is None:  # no message_start yet: the message is announced whole
            self.transcript.take((message,))
            await self._announce_taken()
            return message
        delivering = self.emitter.emit_nowait(MessageEnd(message))  # it replaces the partial
        if delivering is not None:
            await delivering
        return message

    async def _respond_compacted(self) -> AssistantMessage:
        """:meth:`_respond` with compaction on: the transcript is compacted first when its
        context nears the model's window; a response that overflowed it anyway is followed by
        one compaction and, when that made a summary, the same request again (a second
        overflow is the turn's error)."""
        compactor = self.compactor
        assert compactor is not None
        setup = self.setup
        if compactor.due(setup.model):
            await compactor.compact("threshold", setup.model, setup.options)
        message = await self._respond()
        if compactor.overflowed(message, setup.model):
            self.phase = REQUESTING  # the turn goes on: its request is to be sent again
            if await compactor.compact("overflow", setup.model, setup.options) is not None:
                message = await self._respond()
            else:
                self.phase = self._after(message)
        return message

    async def _respond_output_failed(self) -> AssistantMessage:
        """The response of a turn after the structured output's attempts were used up, made
        without a request: an empty assistant message with stop_reason "error" naming the
        last failure (the run then ends as after a provider's error)."""
        assert self.output is not None and self.output.failure is not None
        failure = self.response_error = self.output.failure
        message = bare_message(self.setup.model, "error", str(failure))
        self.phase = self._after(message)
        self.transcript.take((message,))
        await self._announce_taken()
        return message

    async def _answer_open_calls(self) -> AssistantMessage:
        """The first turn of a run that continues calls that waited for a decision: no
        request; the turn runs those calls with the decisions (``config.tool_decisions``),
        as the batch of the assistant message that made them."""
        self.respond = _Run._respond if self.compactor is None else _Run._respond_compacted
        assert self.open_calls is not None
        message, calls = self.open_calls
        self.phase = self._after(message, calls)
        await trio.lowlevel.checkpoint()  # as a request would be
        return message

    def _after(self, message: AssistantMessage, calls: list[ToolCall] | None = None) -> Phase:
        """The phase a response leads to: its tool calls (or ``calls`` of them, which waited
        for decisions) to run, or an answered turn."""
        to_run = message.tool_calls if calls is None else calls
        if message.stop_reason in _FAILED or not to_run:
            return Answered(message, [], ending=True)
        config = self.config
        return RunningTools(
            ToolBatch(
                message,
                to_run,
                self.setup.context,
                self.setup.tools,
                self.emitter.emit_nowait,
                self._announce,
                sequential=config.tool_execution == "sequential",
                before_tool_call=config.before_tool_call,
                after_tool_call=config.after_tool_call,
                max_parallel=config.max_parallel_tools,
                tool_timeout=config.tool_timeout,
                steering=(
                    config.steering_signal if config.steering_policy == "at_tool_boundary" else None
                ),
                # the decisions are about the calls that waited (``calls``), never later ones
                decisions=config.tool_decisions if calls is not None else None,
            )
        )

    async def _run_tools(self, message: AssistantMessage) -> tuple[list[ToolResultMessage], bool]:
        """Run the response's tool batch, if it has one; its results, and whether the model is
        to be asked again: not every result asked to terminate; with structured output, as
        :meth:`OutputGuard.judge` says."""
        phase = self.phase
        results: list[ToolResultMessage] = []
        more_tool_calls = awaiting = False
        if isinstance(phase, RunningTools):
            batch = phase.batch
            refuse = None
            if message.stop_reason == "length":
                refuse = LENGTH_TOOL_TEXT.format(name=", ".join(call.name for call in batch.calls))
            try:
                await batch.run(refuse)
            except Exception as exc:  # a hook of the batch itself (steering_signal)
                await self.emitter.fail(exc)
            awaiting = batch.any_waiting  # calls wait for a person: the run ends after this turn
            results, more_tool_calls = batch.messages, not awaiting and not batch.terminate
        if self.output is not None:  # the whole batch: a continue_() runs only its decided calls
            batch_results = ending_results(self.transcript.messages)
            more_tool_calls = self.output.judge(message, batch_results, more_tool_calls)
            if self.output.failure is not None:
                self.respond = _Run._respond_output_failed
        self.phase = Answered(message, results, not more_tool_calls, awaiting)
        return results, more_tool_calls

    async def _end_turn(
        self,
        message: AssistantMessage,
        tool_results: list[ToolResultMessage],
        turn: TurnContext | None,
    ) -> FinishTurnDecision:
        """pi 1.x's ``finish_turn`` (also after a failed response), then ``turn_end``."""
        decision: FinishTurnDecision = None
        if self.config.finish_turn is not None:
            decision = await self._hook(self.config.finish_turn, turn)
        phase = self.phase
        assert isinstance(phase, Answered)
        if phase.awaiting:
            self.phase = AWAITING
        else:
            self.phase = ENDING if phase.ending else BETWEEN_TURNS
        delivering = self.emitter.emit_nowait(TurnEnd(message, tool_results))
        if delivering is not None:
            await delivering
        return decision

    async def _end(self) -> None:
        self.phase = ENDED
        new_messages = self.transcript.new_messages
        output = None
        if self.output is not None:  # the last batch, also when an earlier run began it
            output = last_output(self.transcript.messages, self.output.tool)
        await self.emitter.emit(AgentEnd(new_messages, error=self.response_error, output=output))

    async def _close(self) -> None:
        """Complete the transcript to pi's aborted shape, then deliver the closing events."""
        opening: list[AgentEvent] = []
        if self.respond is _Run._answer_open_calls and self.phase in (REQUESTING, BETWEEN_TURNS):
            # cut before the calls that waited for decisions ran: they get "aborted" results
            # as in a batch cut short (else they would stay without any, behind the aborted
            # turn, and the transcript could not go on); their turn starts first if it had not
            assert self.open_calls is not None
            if self.phase is BETWEEN_TURNS:
                opening.append(TurnStart())
                self.emitter.apply(opening[0])
            self.phase = self._after(*self.open_calls)
        tool = None if self.output is None else self.output.tool
        events = opening + closing_events(self.phase, self.emitter, self.setup.model, tool)
        self.phase = ENDED
        await self.emitter.close(events)

    # --- the application's callbacks ---------------------------------------------------------

    async def _hook(self, hook: Callable[..., Any], *args: Any) -> Any:
        """A hook's answer; a hook that raises ends the run with stop_reason "error"."""
        try:
            return await call_maybe_async(hook, *args)
        except Exception as exc:
            await self.emitter.fail(exc)

    async def _poll(self, source: Callable[[], Any] | None) -> bool:
        """Take queued steering/follow-up messages; True when there were any."""
        if source is None:
            return False
        try:
            taken = await call_maybe_async(source)
            messages = list(taken) if taken else []
        except Exception as exc:  # a failing source, or one that returned no list
            await self.emitter.fail(exc)
        return self.transcript.take(messages)

    async def _prepare_next_turn(self, last: TurnContext, pending: bool) -> None:
        """pi 1.x's ``prepare_next_turn``: messages to add, the model, thinking level and
        tools of later requests."""
        assert self.config.prepare_next_turn is not None
        answer = await self._hook(self.config.prepare_next_turn, last)
        try:
            update = hook_answer(answer, TurnUpdate, "prepare_next_turn")
        except TypeError as exc:
            await self.emitter.fail(exc)
        if update is not None:
            self.transcript.take(list(update.messages))
            setup = self.setup
            context, options = setup.context, setup.options
            if update.tools is not None:
                tools = list(update.tools)
                if self.output is not None:
                    tools = self.output.tools_with_output(tools)
                context = attrs.evolve(context, tools=tools)
            if update.thinking_level is not None:
                level = None if update.thinking_level == "off" else update.thinking_level
                options = attrs.evolve(options, reasoning=level)
            self.setup = TurnSetup(context, update.model or setup.model, options)
        if not pending:  # preparing may take a while: steering queued meanwhile goes in now
            await self._poll(self.get_steering)


def run(
    prompts: Sequence[AgentMessage] | None,
    context: AgentContext,
    config: AgentLoopConfig,
    sink: EventSink,
    cancel_scope: trio.CancelScope | None = None,
) -> Coroutine[Any, Any, list[AgentMessage]]:
    """The loop on ``context`` (``prompts`` first, or continue when None), to await; see
    :func:`pi_trio.run_agent_loop`. A plain function: no frame of its own while it runs."""
    if cancel_scope is not None and not isinstance(cancel_scope, trio.CancelScope):
        raise TypeError(
            "cancel_scope must be a fresh trio.CancelScope (the run enters it; cancel it to "
            f"abort the run), got a {type(cancel_scope).__name__}"
        )
    return _Run(context, config, sink, cancel_scope).execute(prompts)
