"""Memory-channel subscriptions to an agent's events (``agent.events()``).

Each subscriber gets its own channel, fed synchronously from the agent's delivery step with
``send_nowait``, so a slow reader never holds up the run unless it asks to. Two bounds:

* ``max_buffer_size``: when that many events wait unread, further *streaming* events
  (``message_update``, ``tool_execution_update``) and ``queue_update`` notices are dropped for
  that reader (counted in ``dropped``); lifecycle events (starts, ends, turns) are still
  queued, so a reader that catches up sees every message and every tool call complete.
* ``max_backlog``: when that many events wait unread, the policy applies.
  ``on_overflow="disconnect"`` (the default) drops the subscription: the reader reads what was
  queued, then its ``receive()`` raises :class:`pt.EventsOverflowError`. ``"block"`` makes the
  run wait (inside its cancel scope, so ``abort()`` still works) until the reader has room;
  with ``"block"`` nothing is dropped and ``max_buffer_size`` is the bound for every event.
"""

from __future__ import annotations

import math
from types import BuiltinMethodType, MethodType
from typing import Literal, TypeAlias

import trio

from .._errors import EventsOverflowError
from ..events import AgentEvent, BudgetReached, MessageUpdate, QueueUpdate, ToolExecutionUpdate

__all__ = ["ChannelEvent", "EventsReceiver", "OverflowPolicy", "Subscription", "same_listener"]

OverflowPolicy: TypeAlias = Literal["disconnect", "block"]

ChannelEvent: TypeAlias = AgentEvent | QueueUpdate | BudgetReached
"""What an ``events()`` channel carries: the run events, queue changes and budget notices."""

_DROPPABLE = (MessageUpdate, ToolExecutionUpdate, QueueUpdate)
DEFAULT_MAX_BACKLOG = 4096


class Subscription:
    """The agent's side of one ``agent.events()`` channel."""

    __slots__ = (
        "_room",
        "_send",
        "dropped",
        "max_backlog",
        "max_buffer_size",
        "on_overflow",
        "overflowed",
        "queued",
        "receive",
    )

    def __init__(
        self,
        max_buffer_size: float,
        *,
        max_backlog: float | None = None,
        on_overflow: OverflowPolicy = "disconnect",
    ) -> None:
        if max_buffer_size < 0:
            raise ValueError(f"max_buffer_size must be >= 0, got {max_buffer_size!r}")
        if on_overflow not in ("disconnect", "block"):
            raise ValueError(f'on_overflow must be "disconnect" or "block", got {on_overflow!r}')
        if on_overflow == "block" and max_buffer_size < 1:
            raise ValueError('on_overflow="block" needs max_buffer_size >= 1')
        if max_backlog is None:
            max_backlog = max(DEFAULT_MAX_BACKLOG, max_buffer_size)
        if max_backlog < max_buffer_size:
            raise ValueError(
                f"max_backlog ({max_backlog!r}) must be >= max_buffer_size ({max_buffer_size!r})"
            )
        self.max_buffer_size = max_buffer_size
        self.max_backlog = max_backlog
        self.on_overflow: OverflowPolicy = on_overflow
        self.dropped = 0
        self.queued = 0  # events sent and not yet received
        self.overflowed = False
        self._room = trio.lowlevel.ParkingLot()
        self._send, receive = trio.open_memory_channel[ChannelEvent](math.inf)
        self.receive = EventsReceiver(receive, self)

    @property
    def blocks(self) -> bool:
        return self.on_overflow == "block"

    def offer(self, event: ChannelEvent) -> bool:
        """Queue ``event`` without blocking; False once the subscription is over (the reader
        closed it, or it overflowed under "disconnect"). Under "block" the caller awaits
        :meth:`wait_for_room` first when :meth:`full`."""
        queued = self.queued
        if (
            queued >= self.max_buffer_size
            and not self.blocks
            and not self._send.statistics().tasks_waiting_receive  # a reader waits: hand it
        ):
            if isinstance(event, _DROPPABLE):
                self.dropped += 1
                return True
            if queued >= self.max_backlog:
                self.overflowed = True
                self._send.close()
                return False
        try:
            self._send.send_nowait(event)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        self.queued = queued + 1
        return True

    def offer_now(self, event: ChannelEvent) -> bool:
        """Queue a notice without ever waiting (under "block" too: past ``max_backlog`` it is
        dropped and counted); False once the subscription is over."""
        if self.blocks and self.queued >= self.max_backlog:
            self.dropped += 1
            return True
        return self.offer(event)

    def full(self) -> bool:
        return self.queued >= self.max_buffer_size

    async def wait_for_room(self) -> None:
        """Under "block": wait until the reader has taken an event (or closed its end)."""
        while self.full() and not self.receive.closed:
            await self._room.park()

    def taken(self) -> None:
        """Called by the receiver for each event it hands out."""
        self.queued -= 1
        if self._room:
            self._room.unpark_all()

    def close(self) -> None:
        self._send.close()
        if self._room:
            self._room.unpark_all()


class EventsReceiver(trio.abc.ReceiveChannel[ChannelEvent]):
    """The reader's end of ``agent.events()``: a memory channel's receive side that knows
    about its subscription's bounds (``async for event in rx`` works as usual)."""

    def __init__(
        self, channel: trio.MemoryReceiveChannel[ChannelEvent], subscription: Subscription
    ) -> None:
        self._channel = channel
        self._subscription = subscription
        self.closed = False

    @property
    def dropped(self) -> int:
        """How many streaming events were dropped because this reader lagged."""
        return self._subscription.dropped

    def receive_nowait(self) -> ChannelEvent:
        """The next event, or ``trio.WouldBlock``; after an overflow, once the queued events
        are read: :class:`pt.EventsOverflowError`."""
        try:
            event = self._channel.receive_nowait()
        except trio.EndOfChannel:
            self._raise_if_overflowed()
            raise
        self._subscription.taken()
        return event

    async def receive(self) -> ChannelEvent:
        """The next event (waits for it). ``trio.EndOfChannel`` once the subscription has
        ended; :class:`pt.EventsOverflowError` instead when it ended because this reader fell
        ``max_backlog`` events behind. Cancellation leaves the channel unchanged."""
        try:
            event = await self._channel.receive()
        except trio.EndOfChannel:
            self._raise_if_overflowed()
            raise
        self._subscription.taken()
        return event

    def _raise_if_overflowed(self) -> None:
        subscription = self._subscription
        if subscription.overflowed:
            raise EventsOverflowError(
                f"this events() reader fell {subscription.max_backlog} events behind and was "
                "dropped; read faster, raise max_backlog, or use on_overflow='block'"
            ) from None

    def statistics(self) -> trio.MemoryChannelStatistics:
        return self._channel.statistics()

    def close(self) -> None:
        self.closed = True
        self._channel.close()
        self._subscription.close()

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()


def same_listener(one: object, other: object) -> bool:
    """Whether two listeners are one, as pi's ``Set`` of listeners tells: the same object, or
    the same method of the same object (Python makes a new bound method at each access, where
    JavaScript's ``obj.method`` is one function). Equal objects are not one listener."""
    if one is other:
        return True
    if isinstance(one, MethodType) and isinstance(other, MethodType):
        return one.__self__ is other.__self__ and one.__func__ is other.__func__
    if isinstance(one, BuiltinMethodType) and isinstance(other, BuiltinMethodType):
        return one.__self__ is other.__self__ and one.__name__ == other.__name__  # events.append
    return False
