"""``Agent``: pi's stateful shell around the loop, with Trio's cancellation.

A run executes in the caller's task, inside one ``trio.CancelScope`` that :meth:`Agent.abort`
cancels; no task exists while the agent is idle. Its sink (:mod:`._delivery`) applies each event
to the state, then delivers it by direct calls, so a listener, and ``before_tool_call``, see
the state already updated for the event at hand (pi's barrier). ``steer()`` and ``follow_up()``
are synchronous (in-memory inboxes, :mod:`._inbox`); call every method from Trio tasks of
the same run (from a thread: ``trio.from_thread.run_sync(agent.steer, msg)``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import NoReturn

import attrs
import trio

from .._checks import describe
from .._errors import AgentBusyError, ContinueError
from ..coding_messages import CompactionSummary
from ..compaction import Compaction
from ..loop import (
    AgentLoopConfig,
    ConvertToLlm,
    FinishTurn,
    GetApiKey,
    PrepareNextTurn,
    PrepareRequest,
    ShouldStopAfterTurn,
    SteeringPolicy,
    ToolExecution,
    TransformContext,
    run_loop,
)
from ..messages import AgentMessage, ImageContent, checked_message
from ..models import Model
from ..providers import StreamFn, StreamOptions
from ..tools import AfterToolCall, AgentContext, BeforeToolCall, OutputType
from ._approvals import Approvals, undecided_text
from ._budgets import Spending, spending_during
from ._compact import compact_now
from ._delivery import Delivery, Listener
from ._inbox import QueueMode
from ._loop_config import loop_config
from ._options import AgentOptions
from ._queue_methods import QueueMethods
from ._queues import Queues
from ._recorder import Recorder, checks_messages, log_flush_failure
from ._settings import SETTING_NAMES, AgentSettings
from ._state import DEFAULT_MODEL, AgentState
from ._subscriptions import EventsReceiver, OverflowPolicy, Subscription, same_listener
from ._tasks import inside
from ._texts import (
    BUSY_COMPACT,
    BUSY_CONTINUE,
    BUSY_PROMPT,
    CONTINUE_FROM_ASSISTANT,
    NO_MODEL,
    NOTHING_TO_CONTINUE,
    prompt_messages,
)

__all__ = ["Agent", "Listener"]


class Agent(AgentOptions, QueueMethods, Approvals):
    """A stateful agent: transcript, tools, queues, subscribers, one abort scope.

    The keyword options are those of :class:`pt.AgentSettings` (hooks, queue modes, tool
    batches, budgets, the recorder); ``agent.settings`` is the record, and each option is an
    attribute too (assigning one replaces the record, checked at once).

    Raises:
        TypeError: an option of the wrong type (a hook that is not callable, say).
        ValueError: an option out of range; the message names it and what it takes.
    """

    def __init__(
        self,
        initial_state: AgentState | None = None,
        *,
        convert_to_llm: ConvertToLlm | None = None,
        transform_context: TransformContext | None = None,
        stream_fn: StreamFn | None = None,
        get_api_key: GetApiKey | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        should_stop_after_turn: ShouldStopAfterTurn | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        tool_execution: ToolExecution = "parallel",
        session_id: str | None = None,
        stream_options: StreamOptions | None = None,
        close_timeout: float = 5.0,
        recorder: Recorder | None = None,
        max_parallel_tools: int | None = None,
        tool_timeout: float | None = None,
        steering_policy: SteeringPolicy = "after_batch",
        max_turns: int | None = None,
        max_tool_calls: int | None = None,
        max_total_tokens: int | None = None,
        max_cost: float | None = None,
        finish_turn: FinishTurn | None = None,
        prepare_request: PrepareRequest | None = None,
        prepare_next_turn: PrepareNextTurn | None = None,
        compaction: Compaction | None = None,
        output_type: OutputType | None = None,
        output_retries: int = 1,
    ) -> None:
        given = locals()  # every keyword above is a setting: one record, checked at once
        settings = AgentSettings(**{name: given[name] for name in SETTING_NAMES})
        if initial_state is not None and not isinstance(initial_state, AgentState):
            raise TypeError(
                f"initial_state must be a pt.AgentState, got {describe(initial_state)}"
                + (
                    ": write pt.Agent(pt.AgentState(model=model))"
                    if isinstance(initial_state, Model)
                    else ""
                )
            )
        self._state = attrs.evolve(initial_state) if initial_state is not None else AgentState()
        self._delivery = Delivery(self._state)
        self._queues = Queues(self._delivery)
        self._use(settings)
        self._scope: trio.CancelScope | None = None
        self._run_task: trio.lowlevel.Task | None = None
        self._outer_nurseries: tuple[trio.Nursery, ...] = ()
        self._idle: trio.Event | None = None

    def _use(self, settings: AgentSettings) -> None:
        super()._use(settings)
        self._delivery.recorder = settings.recorder
        self._queues.steering.mode = settings.steering_mode
        self._queues.follow_ups.mode = settings.follow_up_mode

    def __copy__(self) -> NoReturn:
        raise TypeError(
            "a pt.Agent cannot be copied: the copy would share its transcript, queues and "
            "subscribers. Make another: pt.Agent(attrs.evolve(agent.state)), then "
            "other.settings = agent.settings.evolve(recorder=None)"
        )

    def __deepcopy__(self, memo: object) -> NoReturn:
        self.__copy__()

    # --- state and queues --------------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        return self._state

    @property
    def is_running(self) -> bool:
        return self._scope is not None

    def reset(self) -> None:
        """Clear the transcript, the runtime state and both queues (pi's ``reset``).

        Raises:
            AgentBusyError: during a run (``abort()`` and ``wait_for_idle()`` first).
        """
        if self._scope is not None:
            raise AgentBusyError("Cannot reset while a run is active: abort() it first.")
        self._state.clear()
        self.clear_all_queues()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event, awaited in subscription order.

        A listener returns None or an awaitable, which is awaited (any other value it returns is
        ignored, as pi ignores it). It runs inside the run's cancel scope; one that
        raises ends the run with an error message (the transcript stays valid). Returns a
        function that unsubscribes. As in pi (a ``Set``), a listener subscribed again is
        still called once per event, and either function unsubscribes it. Unlike pi, an
        event goes to the listeners subscribed when its delivery began (one unsubscribed by
        a listener before it still gets it; one subscribed then gets the next).
        """
        if not callable(listener):
            raise TypeError(
                f"a listener must be a function (or an async function) of the event, got "
                f"{describe(listener)} (subscribe(listener), not subscribe(listener(...)))"
            )
        delivery = self._delivery
        if not any(same_listener(item, listener) for item in delivery.listeners):
            delivery.listeners = (*delivery.listeners, listener)

        def unsubscribe() -> None:
            listeners = delivery.listeners
            delivery.listeners = tuple(i for i in listeners if not same_listener(i, listener))

        return unsubscribe

    @asynccontextmanager
    async def events(
        self,
        max_buffer_size: float = 256,
        *,
        max_backlog: float | None = None,
        on_overflow: OverflowPolicy = "disconnect",
    ) -> AsyncIterator[EventsReceiver]:
        """``async with agent.events() as rx: async for event in rx: ...``

        A channel of this agent's events from now until the block ends (it spans runs), plus a
        :class:`pt.QueueUpdate` whenever a queue changes. It is fed synchronously (no task, no
        hop per event) and bounded:

        Args:
            max_buffer_size: when this many events wait unread, streaming events
                (``message_update``, ``tool_execution_update``) are dropped for this reader
                (``rx.dropped`` counts them); lifecycle events are still queued.
            max_backlog: when this many events wait unread (default: 4096, or
                ``max_buffer_size`` if larger), ``on_overflow`` applies.
            on_overflow: ``"disconnect"``: the subscription is dropped; the reader reads what
                was queued, then ``receive()`` raises :class:`pt.EventsOverflowError`.
                ``"block"``: nothing is dropped; the run waits (abortably) whenever
                ``max_buffer_size`` events wait unread.

        Raises:
            ValueError: a negative size, ``max_backlog < max_buffer_size``, or an unknown
                policy.
        """
        subscription = Subscription(
            max_buffer_size, max_backlog=max_backlog, on_overflow=on_overflow
        )
        subscriptions = self._delivery.subscriptions
        subscriptions.append(subscription)
        try:
            yield subscription.receive
        finally:
            if subscription in subscriptions:
                subscriptions.remove(subscription)
            # not ``async with``: its checkpoint would turn an exception on its way out (a
            # KeyboardInterrupt) into a pending deadline's Cancelled, which then swallows it
            subscription.receive.close()

    # --- runs --------------------------------------------------------------------------------

    async def prompt(
        self,
        input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run the agent on a new prompt until it stops; returns when the run is over.

        Model, tool, hook and listener failures do not raise: they are in the transcript and in
        ``state.error_message``. ``abort()`` ends the run and this returns normally; a
        cancellation from the caller's own scope ends the run the same way (transcript closed,
        closing events delivered within ``close_timeout``) and then propagates.
        ``await nursery.start(agent.prompt, "text")`` returns once the run has begun, so that
        ``abort()`` right after it always finds the run.

        Args:
            input: a text (with optional ``images``), a message, or a list of messages.
            images: images to send with a text prompt.

        Raises:
            AgentBusyError: a run is active.
            TypeError: ``input`` is none of those (a number, None, a dict of JSON, a list of
                texts...), ``images`` holds something that is not a ``pt.ImageContent``, or
                the agent's recorder refuses a message (a durable session, one of a type its
                log could not give back); nothing was changed.
            ValueError: ``images`` given with a message instead of a text; or no model set
                (``state.model`` is still :data:`pt.DEFAULT_MODEL`) and no ``stream_fn``.
            ContinueError: tool calls wait for a decision (``state.pending_approvals``):
                decide them and ``continue_()`` first.
            KeyboardInterrupt: a Ctrl-C (or a tool raising it) during the run, after the run
                was closed; plain, never in an exception group.
        """
        if self._scope is not None:
            raise AgentBusyError(BUSY_PROMPT)
        if self._state.awaiting_approval:
            raise ContinueError(undecided_text(self._state))
        messages = prompt_messages(input, images)
        recorder = self._settings.recorder
        if recorder is not None and checks_messages(recorder):
            for message in messages:
                recorder.check_message(message)
        self._check_model()
        await self._run(messages, task_status=task_status)

    async def continue_(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Continue from the transcript (a retry, or after adding tool results yourself).

        From an assistant tail, a queued steering message (else a follow-up) becomes the prompt.
        With tool calls that waited for approval, all decided: their turn runs them (approved
        ones execute, denied ones get an error result), then the model is called.
        Cancellation and failures behave as in :meth:`prompt`.

        Raises:
            AgentBusyError: a run is active.
            ValueError: no model set and no ``stream_fn`` (as in :meth:`prompt`).
            ContinueError: nothing to continue from (an empty transcript, or an assistant tail
                with nothing queued; pi's texts), or tool calls still wait for a decision.
            TypeError: the transcript's last message is not a message (a value appended to
                ``state.messages`` in place).
        """
        if self._scope is not None:
            raise AgentBusyError(BUSY_CONTINUE)
        self._check_model()
        if self._state.awaiting_approval:
            if self._state.pending_approvals:
                raise ContinueError(undecided_text(self._state))
            await self._run(None, decisions=True, task_status=task_status)
            return
        messages = self._state.messages
        if not messages:
            raise ContinueError(NOTHING_TO_CONTINUE)
        checked_message(messages[-1], "the transcript's last message")
        if messages[-1].role == "assistant":
            if self.recorder is not None:  # durable before a run takes it
                await self.recorder.flush()
                if self._scope is not None:  # a run began while we waited for the flush
                    raise AgentBusyError(BUSY_CONTINUE)
            steering = self._queues.drainer("steer")()
            if steering:
                await self._run(steering, skip_initial_steering_poll=True, task_status=task_status)
                return
            follow_ups = self._queues.drainer("follow_up")()
            if follow_ups:
                await self._run(follow_ups, task_status=task_status)
                return
            raise ContinueError(CONTINUE_FROM_ASSISTANT)
        await self._run(None, task_status=task_status)

    async def compact(self, instructions: str | None = None) -> CompactionSummary | None:
        """Compact the transcript now (pi's ``/compact``), with the agent's ``compaction``
        settings (the defaults when it has none): the older messages are summarised, the
        transcript becomes the summary and the newest messages.

        Returns the new summary; None when there was nothing to cut off or the summary failed
        (its ``compaction_end`` event says why). ``abort()`` and a cancellation from the
        caller's scope leave the transcript unchanged (``abort()``: this returns None; the
        caller's cancellation propagates).

        Args:
            instructions: what the summary should pay attention to, for this one.

        Raises:
            AgentBusyError: a run or another compaction is active.
            TypeError: ``instructions`` is not a string.
            ValueError: no model set and no ``stream_fn`` (as in :meth:`prompt`).
            ContinueError: tool calls wait for a decision (decide and continue first).
            Exception: what a listener (or the recorder) raised on a compaction event, as
                pi 1.6's ``compact()`` throws it (logged once); the transcript is unchanged
                unless it was ``compaction_end`` (then it is the compacted one).
        """
        if self._scope is not None:
            raise AgentBusyError(BUSY_COMPACT)
        if instructions is not None and not isinstance(instructions, str):
            raise TypeError(f"instructions must be a str or None, not {describe(instructions)}")
        if self._state.awaiting_approval:  # their batch must not be cut
            raise ContinueError(undecided_text(self._state))
        self._check_model()
        scope = self._become_running()
        try:
            return await compact_now(
                self._settings, self._state, self._delivery, scope, instructions
            )
        finally:
            await self._end_run()

    def _check_model(self) -> None:
        """Refuse to run on pi's placeholder model with the default ``stream_fn``.

        With a custom ``stream_fn`` the placeholder is allowed (pi allows it: that function
        may not look at the model at all).
        """
        if self.stream_fn is None and self._state.model == DEFAULT_MODEL:
            raise ValueError(NO_MODEL)

    def abort(self, *, clear_queues: bool = False) -> None:
        """Abort the active run, if any (idempotent; does nothing while idle).

        Synchronous: it cancels the run's scope (reason "Agent.abort()"); the run closes its
        transcript in pi's aborted shape and ``prompt()`` returns normally. The queues are kept
        (pi's behaviour) unless ``clear_queues`` (then they are cleared, running or not).
        """
        if clear_queues:
            self.clear_all_queues()
        if self._scope is not None:
            self._scope.cancel(reason="Agent.abort()")

    async def wait_for_idle(self) -> None:
        """Return once no run is active (at once, after a checkpoint, when idle).

        Always a checkpoint; cancelling it leaves the run alone.

        Raises:
            RuntimeError: called from inside the run (a listener, a hook, a tool): the run
                would wait for itself.
        """
        if self._scope is not None:
            if self._inside_run():
                raise RuntimeError("wait_for_idle() called from inside the run it waits for")
            # made by the first waiter: a run nobody waits for allocates no Event
            idle = self._idle
            if idle is None:
                idle = self._idle = trio.Event()
            await idle.wait()
        else:
            await trio.lowlevel.checkpoint()

    def _inside_run(self) -> bool:
        run_task = self._run_task
        return run_task is not None and inside(run_task, self._outer_nurseries)

    async def _run(
        self,
        prompts: list[AgentMessage] | None,
        *,
        skip_initial_steering_poll: bool = False,
        decisions: bool = False,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        config, scope, context, spending = self._begin_run(skip_initial_steering_poll, task_status)
        if decisions:  # the waiting calls run first, with the decisions made about them
            config = attrs.evolve(config, tool_decisions=self._state.tool_decisions)
        try:
            with spending_during(spending):  # what nested runs (sub-agents) are bounded by
                await run_loop(prompts, context, config, self._delivery, cancel_scope=scope)
        finally:
            await self._end_run()

    def _begin_run(
        self, skip_initial_steering_poll: bool, task_status: trio.TaskStatus[None]
    ) -> tuple[AgentLoopConfig, trio.CancelScope, AgentContext, Spending | None]:
        """Make this agent the running one; the config, the run's cancel scope (``abort()``
        cancels it), the context (the loop appends to ``state.messages`` itself), the spending."""
        state = self._state
        config, spending = loop_config(
            self._settings,
            state,
            self._queues,
            self._delivery,
            skip_first_steering_poll=skip_initial_steering_poll,
        )
        scope = self._become_running()
        task_status.started()
        state.begin_run()
        self._delivery.begin_run()
        context = AgentContext(state.system_prompt, state.messages, list(state.tools))
        return config, scope, context, spending

    def _become_running(self) -> trio.CancelScope:
        """A run (or a compaction) of this agent begins in the current task; ``abort()``
        cancels the scope returned. The nurseries the caller has open around it are noted:
        their tasks are not inside the run (``wait_for_idle()``)."""
        scope = self._scope = trio.CancelScope()
        task = self._run_task = trio.lowlevel.current_task()
        self._outer_nurseries = tuple(task.child_nurseries)  # usually ()
        return scope

    async def _end_run(self) -> None:
        """Make this agent idle again, however the run ended. The transcript is complete even
        when closing events were not delivered; a recorder is flushed first."""
        self._state.end_run()
        recorder = self._delivery.recorder
        try:
            if recorder is not None:
                await self._final_flush(recorder)
        finally:  # idle however the flush ended (a KeyboardInterrupt in it, say)
            self._scope = None
            self._run_task = None
            self._outer_nurseries = ()  # the last caller's nurseries (and their contexts)
            idle, self._idle = self._idle, None
            if idle is not None:
                idle.set()

    async def _final_flush(self, recorder: Recorder) -> None:
        """Whatever the recorder noted without needing it durable at once (agent_end, say)
        is made durable as the run ends; shielded, bounded by ``close_timeout``."""
        with trio.move_on_after(self.close_timeout, shield=True):
            try:
                await recorder.flush()
            except Exception as exc:
                failed = self._delivery.flush_failed  # then the run's flush said so already
                log_flush_failure(
                    exc, "recorder flush failed at the end of the run",
                    again=failed,
                )  # fmt: skip

    def __repr__(self) -> str:
        status = "running" if self._scope is not None else "idle"
        return (
            f"<Agent {status} model={self._state.model.provider}/{self._state.model.id} "
            f"messages={len(self._state.messages)}>"
        )
