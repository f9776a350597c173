"""One event at a time from a batch's concurrent tool tasks into the run's event sink."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from ..events import AgentEvent, ToolExecutionUpdate

__all__ = ["Emit", "OneAtATime"]

Emit = Callable[[AgentEvent], Awaitable[None] | None]
"""Applies and sends one event: None when that is done, else an awaitable that finishes it
(an ``async def`` is fine: its coroutine is always awaited)."""


class OneAtATime:
    """Serializes the events of concurrent tool tasks: a listener that awaits (a socket write,
    say) must not be entered by a second task while it is suspended. Synchronous when free and
    nothing awaits (returns None, like :data:`Emit`); otherwise an awaitable that holds the turn
    until the event is delivered. ``mark`` runs once the task holds the turn, right before the
    event is applied, so a slot never says "ended" for an event that a cancellation kept from
    being applied.

    Once sending an event other than a progress update raised (a cancellation, a listener's
    ``KeyboardInterrupt``), the turn is never given again: the batch is being torn down, and
    that event's delivery resumes in the run's close-out. A sibling task that is still running
    (woken before its cancellation reached it) must not send its own event in between: that
    would take the sink's note of who still needs the interrupted one. It waits for its
    cancellation instead, its event neither applied nor sent (the close-out sends it)."""

    __slots__ = ("_busy", "_emit", "_stopped", "_waiting")

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._busy = False
        self._stopped = False
        self._waiting = trio.lowlevel.ParkingLot()

    def emit(
        self, event: AgentEvent, mark: Callable[[], None] | None = None
    ) -> Awaitable[None] | None:
        if self._busy or self._stopped:
            return self._emit_in_turn(event, mark)
        if mark is not None:
            mark()
        try:
            pending = self._emit(event)
        except BaseException:
            self._stop(event)
            raise
        if pending is None:
            return None
        self._busy = True  # held until the awaitable (awaited at once by the caller) is done
        return self._finish(event, pending)

    async def _finish(self, event: AgentEvent, pending: Awaitable[None]) -> None:
        try:
            await pending
        except BaseException:
            self._stop(event)
            raise
        finally:
            self._release()

    async def _emit_in_turn(self, event: AgentEvent, mark: Callable[[], None] | None) -> None:
        while self._busy or self._stopped:
            await self._waiting.park()
        self._busy = True
        try:
            if mark is not None:
                mark()
            pending = self._emit(event)
            if pending is not None:
                await pending
        except BaseException:
            self._stop(event)
            raise
        finally:
            self._release()

    def _stop(self, event: AgentEvent) -> None:
        # a progress update cut short (the tool's own timeout) does not end the batch
        if type(event) is not ToolExecutionUpdate:
            self._stopped = True

    def _release(self) -> None:
        self._busy = False
        if self._waiting:  # stopped: the one woken parks again
            self._waiting.unpark()
