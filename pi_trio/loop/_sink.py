"""Where a run's events go: any :class:`EventSink`, or a :class:`RunSink` that keeps state.

These are the loop's seams: ``run_agent_loop(..., sink)`` takes either; ``pt.Agent`` plugs into
the loop as a :class:`RunSink`. Nothing else about a sink is looked up.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable
from typing import Protocol, TypeGuard, runtime_checkable

from ..events import AgentEvent

__all__ = ["EventSink", "RunSink", "is_run_sink"]


@runtime_checkable
class EventSink(Protocol):
    """Where the loop sends its events: a ``trio.MemorySendChannel`` or anything alike.

    The loop awaits ``send(event)`` for each event, in order, from the task that runs it (or,
    during a parallel tool batch, from one tool task at a time). Two rules a sink must keep:

    * **A cancelled send is retried.** When a cancellation interrupts ``send(event)``, the
      run's close-out calls ``send`` again with the *same* event object before the closing
      events. A memory channel's cancelled send delivered nothing, so this delivers it once; a
      sink that fans out resumes with the receivers that missed it. A sink that cannot tell
      should make its sends idempotent for the same object.
    * **An exception from send ends the run** with stop_reason "error" (the exception's text);
      the closing events are still sent, and their exceptions are ignored.
    """

    def send(self, value: AgentEvent, /) -> Awaitable[None]: ...


@runtime_checkable
class RunSink(EventSink, Protocol):
    """An :class:`EventSink` with state of its own, kept in step with the run's transcript
    (``pt.Agent``'s sink is one). Whether a sink is one is decided by its class (it has the
    three methods below), once per class.

    For each event the loop first applies it to the run's transcript, then calls
    :meth:`apply`, then :meth:`deliver_nowait`. So the sink's state is updated before anyone
    is told, and when a cancellation cuts delivery short, the close-out applies every closing
    event before it delivers any: the state is complete whether or not delivery finishes.
    :meth:`send` is used by nobody but the sink's own callers.
    """

    def apply(self, event: AgentEvent, /) -> None:
        """Update the sink's state for ``event``; synchronous, must not block. A
        ``message_update`` whose message is the one already streaming is not applied (it
        changes nothing); every other event is."""
        ...

    def deliver_nowait(self, event: AgentEvent, /) -> Awaitable[None] | None:
        """Deliver ``event`` (already applied) as far as that goes without waiting: None when
        it is delivered, else an awaitable the loop awaits at once to finish. The rules of
        :class:`EventSink` hold for it (a delivery cut short is resumed with the same event;
        an exception ends the run)."""
        ...

    def closing(self) -> None:
        """The run's close-out begins: its closing events come next, within a grace period,
        so the sink should not wait for slow readers from now on."""
        ...


@runtime_checkable
class _KeepsState(Protocol):
    def apply(self, event: AgentEvent, /) -> None: ...


def is_run_sink(sink: EventSink) -> TypeGuard[RunSink]:
    """Whether ``sink``'s class has :class:`RunSink`'s methods.

    Raises:
        TypeError: it has ``apply`` but not the other two (a sink with state of its own is a
            RunSink whole; half of one would have its ``apply`` silently ignored).
    """
    return _is_run_sink_class(type(sink))


@functools.lru_cache(maxsize=256)
def _is_run_sink_class(cls: type) -> bool:
    """Remembered per class: a Protocol's ``issubclass`` walks its members each time (~80k
    instructions on 3.11)."""
    if issubclass(cls, RunSink):
        return True
    if issubclass(cls, _KeepsState):
        raise TypeError(
            f"the sink {cls.__qualname__} has apply() but not deliver_nowait() and closing(): "
            "a sink with state of its own is a pt.RunSink (all four methods); a plain sink has "
            "only an async send()"
        )
    return False
