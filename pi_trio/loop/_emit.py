"""``Emitter``: the one place that applies a run's events and delivers them.

Shaped like a trio memory channel's ``send_nowait`` / ``send``: :meth:`Emitter.emit_nowait`
applies an event (the run's transcript, then the sink's own state) and delivers it as far as
that goes synchronously, returning an awaitable only when something must wait;
:meth:`Emitter.emit` is the same in one ``await``. State first, then delivery: whatever stops
a delivery, the state already says the event happened.

A failure of the sink (or of any callback the run calls through :meth:`Emitter.fail`) ends the
run with stop_reason "error" by cancelling the run's own cancel scope, so it travels as a
cancellation through whatever is running (a tool batch's nursery included), never as an
exception group. :meth:`Emitter.close` delivers a run's closing events: the one whose
delivery a cancellation interrupted first, then the rest, in a shielded scope bounded by the
grace period.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable
from logging import ERROR
from typing import NoReturn, TypeAlias

import trio

from .._callbacks import exception_text
from .._logging import log_failure, loop_logger
from ..events import (
    AgentEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
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
    ToolExecutionUpdate,
)
from ..messages import AssistantMessage
from ._sink import EventSink, is_run_sink
from ._transcript import Transcript

__all__ = ["Emitter", "StreamEnd"]

StreamEnd: TypeAlias = StreamDone | StreamError

_UPDATE_TYPES = frozenset(
    {
        TextStart, TextDelta, TextEnd, ThinkingStart, ThinkingDelta, ThinkingEnd,
        ToolCallStart, ToolCallDelta, ToolCallEnd,
    }
)  # fmt: skip
_END_TYPES = (StreamDone, StreamError)
_new = object.__new__

_MAX_RESUMES = 64
"""How many times :meth:`Emitter.close` sends one closing event again after a subscriber
raised a ``KeyboardInterrupt`` on it (each resend resumes after that subscriber)."""


def _no_state(event: AgentEvent) -> None:
    pass


def _update(event: StreamEvent) -> MessageUpdate:
    """``MessageUpdate(event.partial, event)``, made without its ``__init__`` frame (one per
    streamed delta)."""
    update = _new(MessageUpdate)
    update.extra = None
    update.message = event.partial  # type: ignore[union-attr]
    update.assistant_message_event = event
    update.seq = None
    return update


class Emitter:
    """Applies and delivers the events of one run.

    Args:
        sink: where the events go; a :class:`RunSink` has its state applied and its
            synchronous delivery used, any other sink is awaited on ``send``.
        transcript: the run's transcript, which every event is applied to first.
        scope: the run's cancel scope; :meth:`fail` cancels it.
        close_timeout: the grace period (seconds) of :meth:`close`.
    """

    __slots__ = (
        "_deliver",
        "_sink",
        "_sink_apply",
        "close_timeout",
        "deferred",
        "failure",
        "interrupted",
        "scope",
        "transcript",
    )

    def __init__(
        self,
        sink: EventSink,
        transcript: Transcript,
        scope: trio.CancelScope,
        close_timeout: float,
    ) -> None:
        self._sink = sink
        self._sink_apply: Callable[[AgentEvent], None] = _no_state
        self._deliver: Callable[[AgentEvent], Awaitable[None] | None] = sink.send
        if is_run_sink(sink):
            self._sink_apply = sink.apply
            self._deliver = sink.deliver_nowait
        self.transcript = transcript
        self.scope = scope
        self.close_timeout = close_timeout
        self.failure: BaseException | None = None
        """What ended the run with stop_reason "error", once something did."""
        self.interrupted: AgentEvent | None = None
        """An event that was applied but whose delivery a cancellation cut short."""
        self.deferred: list[AgentEvent] = []
        """Events applied, whose delivery is left to the close-out (:meth:`defer`)."""

    def apply(self, event: AgentEvent) -> None:
        """State first: advance the transcript for ``event``, then the sink's own state.

        A sink whose ``apply`` raises ends the run with stop_reason "error": the failure is
        noted here, and the event is still delivered (the transcript has it) before the run
        fails. A ``KeyboardInterrupt`` from it leaves the event to the close-out's delivery.
        """
        cls = type(event)
        if cls is MessageUpdate:
            self.transcript.open = event.message  # type: ignore[union-attr]  # a new partial
        elif cls is MessageEnd:
            self.transcript.end(event.message)  # type: ignore[union-attr]
        elif cls is MessageStart:
            self.transcript.start(event.message)  # type: ignore[union-attr]
        try:
            self._sink_apply(event)
        except Exception as exc:
            self.note_failure(exc)
        except BaseException:
            self.interrupted = event
            raise

    def record_after_end(self, message: AssistantMessage) -> None:
        """Add ``message`` after ``agent_end`` (the sink failed on it): to the transcript and
        the sink's state, delivered to nobody (the run's new messages were handed out with
        ``agent_end`` already)."""
        self.transcript.messages.append(message)
        try:
            self._sink_apply(MessageEnd(message))
        except Exception as exc:
            log_failure(loop_logger, ERROR, exc, "the sink's apply failed after agent_end")

    def emit_nowait(self, event: AgentEvent) -> Awaitable[None] | None:
        """Apply ``event``, then deliver it as far as that goes without waiting.

        Returns None when it is delivered, else an awaitable that the caller must await at once
        to finish (a listener waits; or the sink failed, and awaiting it ends the run). An
        update of the message already streaming changes no state: it is only delivered.
        """
        if type(event) is not MessageUpdate or event.message is not self.transcript.open:
            self.apply(event)
        try:
            pending = self._deliver(event)
        except Exception as exc:
            return self.fail(exc)
        except BaseException:
            self._cut_short(event)
            raise
        if pending is None:
            return None if self.failure is None else self.fail(self.failure)
        return self._finish(event, pending)

    async def emit(self, event: AgentEvent) -> None:
        """:meth:`emit_nowait` in one step. On cancellation the event is applied and its
        delivery is resumed by :meth:`close`."""
        pending = self.emit_nowait(event)
        if pending is not None:
            await pending

    async def _finish(self, event: AgentEvent, pending: Awaitable[None]) -> None:
        try:
            await pending
        except Exception as exc:
            await self.fail(exc)
        except BaseException:
            self._cut_short(event)
            raise
        if self.failure is not None:  # the sink's apply failed on this event
            await self.fail(self.failure)

    def defer(self, event: AgentEvent) -> None:
        """Apply ``event`` now and leave its delivery to :meth:`close`, after the event whose
        delivery was cut short (the step that is being cancelled ends with it: an aborted
        ``compaction_end``, also when it was its ``compaction_start`` that was cut short)."""
        self.apply(event)
        self.deferred.append(event)

    def _cut_short(self, event: AgentEvent) -> None:
        # a tool's progress cut short (by the tool's own timeout too) is not sent again: the
        # run may go on, and that tool's tool_execution_end may follow
        if type(event) is not ToolExecutionUpdate:
            self.interrupted = event

    def note_failure(self, exc: BaseException) -> None:
        """Record ``exc`` as what ends the run with stop_reason "error" (the first one wins)
        and log it, once."""
        if self.failure is None:
            self.failure = exc
            log_failure(loop_logger, ERROR, exc, "the run fails: %s", exception_text(exc))

    async def fail(self, exc: BaseException) -> NoReturn:
        """End the run with stop_reason "error": cancel its scope and unwind.

        Raises ``Cancelled`` when called inside the run's scope; outside it (a shielded scope, a
        ``from_thread`` system task), ``exc`` itself.
        """
        self.note_failure(exc)
        self.scope.cancel(reason=f"run failed: {exception_text(exc)}")
        await trio.lowlevel.checkpoint()
        raise exc

    async def relay(self, stream: AsyncIterable[StreamEvent]) -> StreamEnd | None:
        """Emit a model's response stream as the run's events, up to its end event (returned;
        None when the stream stopped without one).

        The stream's start is a ``message_start`` (a second start replaces the first partial);
        each content event is a ``message_update`` (pi ignores those before the start). An
        update of the partial already open changes no state: its delivery is
        :meth:`emit_nowait`'s, written out in the loop (a call per streamed delta is 13% of
        S6's instructions per delta); any other goes through :meth:`emit`.
        :meth:`relay_plainly` is the plain form, and a test checks both give the same events
        and state. On cancellation the transcript's open message is the partial, and
        ``Cancelled`` propagates.
        """
        transcript = self.transcript
        deliver = self._deliver
        async for event in stream:
            cls = type(event)
            if cls in _UPDATE_TYPES:
                open_message = transcript.open
                if open_message is None:
                    continue
                update = _new(MessageUpdate)  # _update(event), written out too
                update.extra = None
                update.message = partial = event.partial  # type: ignore[union-attr]
                update.assistant_message_event = event
                update.seq = None
                if partial is not open_message:  # a new partial to apply: the plain path
                    await self.emit(update)
                    continue
                try:
                    pending = deliver(update)
                except Exception as exc:
                    await self.fail(exc)
                except BaseException:
                    self.interrupted = update
                    raise
                if pending is not None:
                    await self._finish(update, pending)
            elif cls is StreamStart:
                pending = self.emit_nowait(MessageStart(event.partial))  # type: ignore[union-attr]
                if pending is not None:
                    await pending
            elif isinstance(event, _END_TYPES):
                return event
        return None

    async def relay_plainly(self, stream: AsyncIterable[StreamEvent]) -> StreamEnd | None:
        """:meth:`relay` with one :meth:`emit` per event: the reference its written-out
        delivery is tested against."""
        async for event in stream:
            cls = type(event)
            if cls in _UPDATE_TYPES:
                if self.transcript.open is not None:
                    await self.emit(_update(event))
            elif cls is StreamStart:
                await self.emit(MessageStart(event.partial))  # type: ignore[union-attr]
            elif isinstance(event, _END_TYPES):
                return event
        return None

    def _tell_closing(self) -> BaseException | None:
        """Tell a RunSink the close-out begins. Its failure is logged (the closing events
        still go out); a ``KeyboardInterrupt`` is returned, to raise once they are out."""
        if not is_run_sink(self._sink):
            return None
        try:
            self._sink.closing()
        except Exception as exc:
            log_failure(loop_logger, ERROR, exc, "the sink's closing() failed")
        except BaseException as exc:
            return exc
        return None

    async def close(self, events: list[AgentEvent]) -> None:
        """Deliver a run's closing events, already applied, within ``close_timeout``.

        The event whose delivery was cut short goes first (a sink delivers it to whoever
        missed it, and to nobody twice), then the deferred ones. Delivery is synchronous as
        far as the sink allows; an awaitable it returns is awaited in a shielded scope whose
        deadline is the end of the grace period, counted from the first wait. A sink that
        raises still gets the rest; once the grace period has expired during a wait, the
        remaining events are dropped (the state is complete already). Cancellation does not
        interrupt it.

        Raises:
            KeyboardInterrupt: the first one a subscriber raised, once the others had every
                event (the event it interrupted is sent again, resuming after it).
        """
        interrupted, self.interrupted = self.interrupted, None
        deferred, self.deferred = self.deferred, []
        if interrupted is not None or deferred:
            events[:0] = [*([interrupted] if interrupted is not None else ()), *deferred]
        if not events:
            return
        held = self._tell_closing()
        deadline: float | None = None
        for event in events:
            expired = False
            for _ in range(_MAX_RESUMES):
                try:
                    pending = self._deliver(event)
                    if pending is not None:
                        if deadline is None:
                            deadline = trio.current_time() + self.close_timeout
                        with trio.CancelScope(shield=True, deadline=deadline) as grace:
                            await pending
                        expired = grace.cancelled_caught
                except Exception:
                    pass  # a failing sink may still deliver the rest (to other listeners)
                except BaseException as exc:
                    held = held or exc
                    continue  # the same event again: the sink resumes after the one that raised
                break
            if expired:
                break
        if held is not None:
            raise held
