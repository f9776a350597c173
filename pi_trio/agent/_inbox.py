"""The steering and follow-up inboxes: unbounded trio memory channels of queued messages.

``put`` is a synchronous ``send_nowait`` (it never blocks and never fails while the agent
exists); the loop drains with ``receive_nowait``. The inbox counts what it holds, so the poll
of an empty queue (once per turn) costs a comparison, not a ``WouldBlock`` raised and caught.
A message stays in the channel until a poll takes it, and a poll hands what it takes to the
run's transcript at once (the close-out announces it if the run is aborted first), so aborting
a run loses no queued message: it is either still queued or already in the transcript.

Each queued message has an id (:class:`QueuedMessage`), so an application can show the queues
and take back or rewrite what the run has not taken yet (``remove``/``replace``: the channel is
emptied and refilled in order, O(queued), which is small).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
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

    __slots__ = ("_arrival", "_ids", "_queued", "_receive", "_send", "kind", "mode")

    def __init__(self, kind: QueueKind, mode: QueueMode, ids: Callable[[], int]) -> None:
        self.kind: QueueKind = kind
        self.mode: QueueMode = mode
        self._ids = ids
        self._send, self._receive = trio.open_memory_channel[QueuedMessage](math.inf)
        self._queued = 0  # items in the channel: every send and receive below keeps it exact
        self._arrival: trio.Event | None = None  # set by the next put (see next_put)

    def put(self, message: AgentMessage) -> QueuedMessage:
        item = QueuedMessage(f"{self.kind}-{self._ids()}", self.kind, message)
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
        count = self._queued if self.mode == "all" else 1
        self._queued -= count
        receive = self._receive.receive_nowait
        return [receive().message for _ in range(count)]

    def clear(self) -> None:
        self._take_all()

    def snapshot(self) -> tuple[QueuedMessage, ...]:
        """What is queued, in order (the queue is unchanged)."""
        items = self._take_all()
        for item in items:
            self._put(item)
        return tuple(items)

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
        self._send.send_nowait(item)
        self._queued += 1

    def _take_all(self) -> list[QueuedMessage]:
        count, self._queued = self._queued, 0
        receive = self._receive.receive_nowait
        return [receive() for _ in range(count)]


def id_counter() -> Callable[[], int]:
    """Ids for one agent's queued messages (shared by both queues)."""
    return itertools.count(1).__next__
