"""The steering and follow-up inboxes: unbounded trio memory channels of queued messages.

``put`` is a synchronous ``send_nowait`` (it never blocks and never fails while the agent
exists); the loop drains with ``receive_nowait``. An idle agent holds no channel at all: it is
opened when something is first queued (an application with thousands of agents that never
steer pays nothing for the feature). The inbox counts what it holds, so the poll of an empty
queue (once per turn) costs a comparison, not a ``WouldBlock`` raised and caught.

A message stays in the channel until a poll takes it, and a poll hands what it takes to the
run's transcript at once (the close-out announces it if the run is aborted first), so aborting
a run loses no queued message: it is either still queued or already in the transcript.

Each queued message has an id (:class:`QueuedMessage`), so an application can show the queues
and take back or rewrite what the run has not taken yet (``remove``/``replace``: the channel is
emptied and refilled in order, O(queued), which is small). Once a snapshot has been asked for
(each change tells ``events()`` readers what is queued), the inbox keeps one beside the channel,
updated as messages come and go: a change then costs a tuple copy, not a refill of the channel.
"""

from __future__ import annotations

import math
from typing import Literal, TypeAlias, final

import attrs
import trio

from ..messages import AgentMessage
from ._recorder import QueueKind

__all__ = ["Inbox", "QueueKind", "QueueMode", "QueuedMessage"]

QueueMode: TypeAlias = Literal["one-at-a-time", "all"]


@final
@attrs.frozen
class QueuedMessage:
    """A message waiting in an agent's queue: ``kind`` is "steer" or "follow_up"; ``id`` is
    unique per agent (for ``remove_queued`` / ``replace_queued``)."""

    id: str
    kind: QueueKind
    message: AgentMessage


class Inbox:
    """A queue of messages for the agent, drained one at a time or all at once."""

    __slots__ = ("_arrival", "_queued", "_receive", "_send", "_snapshot", "kind", "mode")

    def __init__(self, kind: QueueKind, mode: QueueMode) -> None:
        self.kind: QueueKind = kind
        self.mode: QueueMode = mode
        # the channel, opened on the first put
        self._send: trio.MemorySendChannel[QueuedMessage] | None = None
        self._receive: trio.MemoryReceiveChannel[QueuedMessage] | None = None
        self._queued = 0  # items in the channel: every send and receive below keeps it exact
        self._arrival: trio.Event | None = None  # set by the next put (see next_put)
        # what the channel holds, in order, kept once snapshot() was called (None: not kept)
        self._snapshot: tuple[QueuedMessage, ...] | None = None

    def put(self, message: AgentMessage, number: int) -> QueuedMessage:
        """Queue ``message``; its id is "<kind>-<number>" (the caller numbers them)."""
        item = QueuedMessage(f"{self.kind}-{number}", self.kind, message)
        self._put(item)
        arrival = self._arrival
        if arrival is not None:
            self._arrival = None
            arrival.set()
        return item

    def next_put(self) -> trio.Event:
        """An event set when a message is put after this call (one queued already does not
        count; a replacement or a removal is no arrival). Synchronous, so the caller can
        check ``is_set()`` at any moment and ``await wait()`` when it has nothing else to do."""
        if self._arrival is None:
            self._arrival = trio.Event()
        return self._arrival

    def __len__(self) -> int:
        return self._queued

    def drain(self) -> list[AgentMessage]:
        """Take the next message ("one-at-a-time") or every queued one ("all")."""
        if not self._queued:
            return []
        assert self._receive is not None
        count = self._queued if self.mode == "all" else 1
        self._queued -= count
        if self._snapshot is not None:
            self._snapshot = self._snapshot[count:]
        receive = self._receive.receive_nowait
        return [receive().message for _ in range(count)]

    def clear(self) -> None:
        self._take_all()

    def snapshot(self) -> tuple[QueuedMessage, ...]:
        """What is queued, in order (the queue is unchanged)."""
        snapshot = self._snapshot
        if snapshot is None:
            items = self._take_all()
            for item in items:
                self._put(item)
            snapshot = self._snapshot = tuple(items)
        return snapshot

    def peek(self) -> list[AgentMessage]:
        """What the next drain would take, without taking it."""
        items = self.snapshot()
        return [item.message for item in (items if self.mode == "all" else items[:1])]

    def edit(self, item_id: str, message: AgentMessage | None) -> bool:
        """Remove (``message`` None) or replace the queued message ``item_id``; False when
        nothing with that id is queued here. Order is kept; a replacement keeps the id."""
        items = self._take_all()
        found = False
        for item in items:
            if item.id == item_id:
                found = True
                if message is None:
                    continue
                item = attrs.evolve(item, message=message)
            self._put(item)
        return found

    def _put(self, item: QueuedMessage) -> None:
        if self._send is None:
            self._send, self._receive = trio.open_memory_channel[QueuedMessage](math.inf)
        self._send.send_nowait(item)
        self._queued += 1
        if self._snapshot is not None:
            self._snapshot += (item,)

    def _take_all(self) -> list[QueuedMessage]:
        count, self._queued = self._queued, 0
        self._snapshot = None
        if not count:
            return []
        assert self._receive is not None
        receive = self._receive.receive_nowait
        return [receive() for _ in range(count)]
