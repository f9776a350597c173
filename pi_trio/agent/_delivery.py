"""``Delivery``: the agent's event sink. Apply, then record, then deliver; every subscriber
sees every event once, in order, whatever fails or is cancelled.

For each event of a run the loop calls :meth:`Delivery.apply` (synchronous: the agent's state,
then the recorder), then :meth:`Delivery.deliver_nowait`, a synchronous step that returns an
awaitable only when something has to wait (a listener returned one, a blocking channel is full,
a flush is due); the loop awaits it then. Events to plain-function listeners cost no
coroutine at all.
:meth:`Delivery.send` is the same as one awaitable. Together with :meth:`Delivery.closing` that
is the loop's ``pt.RunSink`` protocol, through which the agent plugs into the loop:

1. the recorder's ``flush()`` when ``record`` asked for it (the event is durable before anyone
   sees it);
2. every ``events()`` channel (synchronous ``send_nowait``; under ``on_overflow="block"`` a full
   channel makes the run wait);
3. every listener, awaited in subscription order, by direct calls (no channel hop).

Failures are isolated per subscriber. A listener that raises does not keep the event from the
listeners after it; once the event has reached everyone, the first exception is raised to the
loop, which ends the run with stop_reason "error" (pi's rule) and still delivers the closing
events to every listener, the failing one included (its further exceptions are logged). A
cancellation that interrupts a listener's await leaves a note of who has not had the event yet;
when the loop sends that same event again in its close-out, delivery resumes with them, so
nobody misses it and nobody gets it twice (the interrupted listener counts as having had it).
A recorder whose ``flush()`` fails ends the run the same way; the event is then delivered with
the next send (later flush failures in that run are logged, not raised).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from inspect import isawaitable, iscoroutinefunction
from typing import TypeAlias

from .._logging import agent_logger, log_failure
from ..events import AgentEvent, BudgetReached, QueueUpdate
from ._recorder import Recorder, log_flush_failure
from ._state import AgentState
from ._subscriptions import Subscription

__all__ = ["Delivery", "Listener"]

Listener: TypeAlias = Callable[[AgentEvent], Awaitable[None] | None]

logger = agent_logger


class Delivery:
    """What an ``Agent`` sends its runs' events to: a :class:`pt.RunSink`."""

    __slots__ = (
        "_careful",
        "_closing",
        "_flush_due",
        "_flush_failed",
        "_listeners",
        "_only",
        "_resume",
        "_seq",
        "_undelivered",
        "recorder",
        "state",
        "subscriptions",
    )

    def __init__(self, state: AgentState) -> None:
        self.state = state
        self.recorder: Recorder | None = None
        self._listeners: tuple[Listener, ...] = ()
        self._only: Listener | None = None  # the listener, when there is exactly one
        self.subscriptions: list[Subscription] = []
        self._seq = 0  # the last sequence number given to an event (per agent, across runs)
        self._closing = False  # the run's close-out is delivering: channels never wait
        self._careful = False  # any of the three below is set: take the careful path
        self._flush_due = False
        self._flush_failed = False
        # (event, channels still to feed, the listeners it goes to, index of the next one)
        self._resume: (
            tuple[AgentEvent, tuple[Subscription, ...], tuple[Listener, ...], int] | None
        ) = None
        self._undelivered: AgentEvent | None = None

    @property
    def listeners(self) -> tuple[Listener, ...]:
        """The listeners every event goes to, in subscription order."""
        return self._listeners

    @listeners.setter
    def listeners(self, value: tuple[Listener, ...]) -> None:
        self._listeners = value
        self._only = value[0] if len(value) == 1 else None

    @property
    def flush_failed(self) -> bool:
        """A recorder flush failed in this run (and was logged)."""
        return self._flush_failed

    def begin_run(self) -> None:
        self._careful = self._flush_due = self._flush_failed = self._closing = False
        self._resume = self._undelivered = None

    def closing(self) -> None:
        """The loop's close-out begins: from now on a blocking channel does not wait for its
        reader (the closing events are queued past its bound), so one stalled reader cannot
        use up the grace period and keep the closing events from everyone else."""
        self._closing = True

    @property
    def apply(self) -> Callable[[AgentEvent], None]:
        """State first: the step the loop calls before each send (read once per run).

        Without a recorder it is the state's own reducer (no extra call per event); with one,
        the reducer and then ``recorder.record``. A recorder set during a run takes effect at
        the next run.
        """
        if self.recorder is None:
            return self.state.apply_event
        return self._apply_and_record

    def _apply_and_record(self, event: AgentEvent) -> None:
        self.state.apply_event(event)
        recorder = self.recorder
        if recorder is not None and recorder.record(event):
            self._flush_due = self._careful = True

    async def send(self, event: AgentEvent) -> None:
        """Deliver ``event`` (already applied) to the channels, then the listeners: the
        awaitable form of :meth:`deliver_nowait`, with the same errors and cancellation."""
        pending = self.deliver_nowait(event)
        if pending is not None:
            await pending

    def deliver_nowait(self, event: AgentEvent) -> Awaitable[None] | None:
        """Deliver ``event`` (already applied) synchronously as far as it goes: None when
        every channel and listener has it; otherwise an awaitable that the caller must await
        to finish (a listener returned an awaitable, a blocking channel is full, a recorder
        flush is due).

        Raises the first exception a listener raised (after every listener had the event; at
        once, or from the awaitable), or the recorder's flush failure (the event is then
        delivered with the next send). Cancellation interrupts the listener being awaited;
        delivering the same event again resumes with the listeners after it.
        """
        if self._careful:
            return self._send_carefully(event)
        self._seq = event.seq = self._seq + 1
        if self.subscriptions:
            waiting = self._feed_nowait(event)
            if waiting is not None:
                return waiting
        # The usual case, one listener: the loop below without the loop, on the path of every
        # event (S6 costs 9% more instructions per delta without it); test_delivery_single
        # checks both give the same run.
        listener = self._only
        if listener is not None:
            try:
                pending = listener(event)
            except Exception as exc:
                _listener_failed(listener, event, exc)
                raise
            except BaseException:
                self._resume = (event, (), (listener,), 1)
                self._careful = True
                raise
            if pending is not None:
                return self._returned(event, (listener,), 1, pending, None)
            return None
        listeners = self._listeners
        failure: Exception | None = None
        index = 0
        for listener in listeners:
            index += 1  # the per-event path: a counter, not enumerate()
            try:
                pending = listener(event)
            except Exception as exc:
                _listener_failed(listener, event, exc)
                if failure is None:
                    failure = exc
                continue
            except BaseException:
                self._resume = (event, (), listeners, index)
                self._careful = True
                raise
            if pending is not None:
                waiting = self._returned(event, listeners, index, pending, failure)
                if waiting is not None:
                    return waiting
        if failure is not None:
            raise failure
        return None

    def _returned(
        self,
        event: AgentEvent,
        listeners: tuple[Listener, ...],
        index: int,
        value: object,
        failure: Exception | None,
    ) -> Awaitable[None] | None:
        """``listeners[index - 1]`` returned ``value`` (not None): an awaitable is awaited, then
        the rest get the event (the awaitable of that is returned); any other value is ignored,
        as pi ignores it (``lambda e: e.type == "x" and seen.append(e)``)."""
        if isawaitable(value):
            return self._await_then_rest(event, listeners, index, value, failure)
        _ignored(listeners[index - 1], event, value)
        return None

    async def _deliver_after_feed(
        self, event: AgentEvent, subscriptions: tuple[Subscription, ...]
    ) -> None:
        listeners = self.listeners
        await self._feed(event, subscriptions, listeners)
        await self._to_listeners(event, listeners, 0)

    async def _await_then_rest(
        self,
        event: AgentEvent,
        listeners: tuple[Listener, ...],
        index: int,
        pending: Awaitable[None],
        failure: Exception | None,
    ) -> None:
        """Await what ``listeners[index - 1]`` returned, then deliver to those after it."""
        try:
            await pending
        except Exception as exc:
            _listener_failed(listeners[index - 1], event, exc)
            if failure is None:
                failure = exc
        except BaseException:
            self._resume = (event, (), listeners, index)
            self._careful = True
            raise
        await self._to_listeners(event, listeners, index, failure)

    async def _send_carefully(self, event: AgentEvent) -> None:
        self._careful = False
        resume, self._resume = self._resume, None  # a stale note (another event) is dropped
        if resume is not None and resume[0] is event:
            _, subscriptions, listeners, index = resume
            await self._feed(event, subscriptions, listeners)
            await self._to_listeners(event, listeners, index)
            return
        undelivered = self._undelivered
        if undelivered is not None:
            self._undelivered = None
            await self._deliver(undelivered)
        if self._flush_due:
            self._flush_due = False
            await self._flush(event)
        await self._deliver(event)

    def offer(self, notice: QueueUpdate | BudgetReached) -> None:
        """Hand a notice that is not a run event (a queue change, a budget) to the ``events()``
        channels, synchronously, at any time (a blocking channel that is full drops it)."""
        self._seq = notice.seq = self._seq + 1
        for subscription in tuple(self.subscriptions):
            if not subscription.offer_now(notice) and subscription in self.subscriptions:
                self.subscriptions.remove(subscription)

    async def _flush(self, event: AgentEvent) -> None:
        recorder = self.recorder
        assert recorder is not None
        try:
            await recorder.flush()
        except Exception as exc:
            if self._flush_failed:
                log_flush_failure(
                    exc, "recorder flush failed again; delivering %s", event.type,
                    again=True,
                )  # fmt: skip
                return
            self._flush_failed = True
            self._undelivered = event
            self._careful = True
            log_flush_failure(
                exc, "recorder flush failed before %s; ending the run", event.type,
            )  # fmt: skip
            raise

    async def _deliver(self, event: AgentEvent) -> None:
        listeners = self.listeners
        if self.subscriptions:
            await self._feed(event, tuple(self.subscriptions), listeners)
        elif event.seq is None:
            self._seq = event.seq = self._seq + 1
        await self._to_listeners(event, listeners, 0)

    def _feed_nowait(self, event: AgentEvent) -> Awaitable[None] | None:
        """Hand ``event`` to every ``events()`` channel. When a blocking one is full, nothing
        is fed yet: the awaitable of the whole delivery (channels, then listeners) instead."""
        subscriptions = tuple(self.subscriptions)
        for subscription in subscriptions:
            if subscription.blocks and not self._closing and subscription.full():
                # numbered when fed, so that a notice offered while it waits (numbered then)
                # reaches every channel before it: seq never goes back in a channel
                self._seq -= 1
                event.seq = None
                return self._deliver_after_feed(event, subscriptions)
        for subscription in subscriptions:
            if not subscription.offer(event):
                self._ended(subscription)
        return None

    def _ended(self, subscription: Subscription) -> None:
        if subscription.overflowed:
            logger.warning(
                "an events() reader fell %s events behind; dropped it", subscription.max_backlog
            )
        if subscription in self.subscriptions:
            self.subscriptions.remove(subscription)

    async def _feed(
        self,
        event: AgentEvent,
        subscriptions: tuple[Subscription, ...],
        listeners: tuple[Listener, ...],
    ) -> None:
        while not self._closing:  # room in every blocking channel first, then all at once
            full = next(
                (s for s in subscriptions if s.blocks and s.full() and not s.receive.closed), None
            )
            if full is None:
                break
            try:
                await full.wait_for_room()
            except BaseException:
                self._resume = (event, subscriptions, listeners, 0)
                self._careful = True
                raise
        if event.seq is None:  # numbered as it is fed (see _feed_nowait)
            self._seq = event.seq = self._seq + 1
        for subscription in subscriptions:
            if not subscription.offer(event):
                self._ended(subscription)

    async def _to_listeners(
        self,
        event: AgentEvent,
        listeners: tuple[Listener, ...],
        index: int,
        failure: Exception | None = None,
    ) -> None:
        count = len(listeners)
        while index < count:
            listener = listeners[index]
            index += 1
            try:
                pending = listener(event)
                if pending is not None:
                    if isawaitable(pending):
                        await pending
                    else:
                        _ignored(listener, event, pending)
            except Exception as exc:
                _listener_failed(listener, event, exc)
                if failure is None:
                    failure = exc
            except BaseException:
                self._resume = (event, (), listeners, index)
                self._careful = True
                raise
        if failure is not None:
            raise failure


def _listener_failed(listener: Listener, event: AgentEvent, exc: Exception) -> None:
    """Log a listener's exception once, with its traceback (the run it ends does not again)."""
    log_failure(logger, logging.ERROR, exc, "listener %s raised on %s", _name(listener), event.type)


def _ignored(listener: Listener, event: AgentEvent, value: object) -> None:
    """A listener returned neither None nor an awaitable: ignored, as pi ignores it, but an
    async function returned uncalled is a bug in the listener, and is logged."""
    call = getattr(value, "__call__", None)  # noqa: B004  (an object with an async __call__)
    if iscoroutinefunction(value) or iscoroutinefunction(call):
        logger.warning(
            "listener %s returned the async function %s on %s without calling it: nothing "
            "was awaited (return %s(...) or await it)",
            _name(listener),
            getattr(value, "__qualname__", type(value).__qualname__),
            event.type,
            getattr(value, "__name__", "it"),
        )


def _name(listener: Listener) -> str:
    """A listener's name for a log record (stable across runs: no address)."""
    name = getattr(listener, "__qualname__", None) or type(listener).__qualname__
    return f"{getattr(listener, '__module__', '?')}.{name}"
