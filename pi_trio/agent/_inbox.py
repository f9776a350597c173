"""The steering and follow-up inboxes: FIFO queues of messages, made on the first put.

``put`` is synchronous (it never blocks and never fails while the agent exists); the loop
drains once per turn. An idle agent holds no queue at all: the deque is made when something is
first queued (an application with thousands of agents that never steer pays nothing for the
feature), and the poll of an empty queue costs a truth test. A message stays queued until a
poll takes it, and a poll hands what it takes to the run's transcript at once (the close-out
announces it if the run is aborted first), so aborting a run loses no queued message: it is
either still queued or already in the transcript.

Each queued message has an id (:class:`QueuedMessage`), so an application can show the queues
and take back or rewrite what the run has not taken yet (``remove``/``replace``: O(queued),
which is small).
"""

from __future__ import annotations

import collections
from typing import Literal, TypeAlias, final

import attrs

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

    __slots__ = ("_items", "kind", "mode")

    def __init__(self, kind: QueueKind, mode: QueueMode) -> None:
        self.kind: QueueKind = kind
        self.mode: QueueMode = mode
        self._items: collections.deque[QueuedMessage] | None = None  # made on the first put

    def put(self, message: AgentMessage, number: int) -> QueuedMessage:
        """Queue ``message``; its id is "<kind>-<number>" (the caller numbers them)."""
        item = QueuedMessage(f"{self.kind}-{number}", self.kind, message)
        items = self._items
        if items is None:
            items = self._items = collections.deque()
        items.append(item)
        return item

    def __len__(self) -> int:
        items = self._items
        return 0 if items is None else len(items)

    def drain(self) -> list[AgentMessage]:
        """Take the next message ("one-at-a-time") or every queued one ("all")."""
        items = self._items
        if not items:
            return []
        if self.mode == "all":
            taken = [item.message for item in items]
            items.clear()
            return taken
        return [items.popleft().message]

    def clear(self) -> None:
        if self._items:
            self._items.clear()

    def snapshot(self) -> tuple[QueuedMessage, ...]:
        """What is queued, in order (the queue is unchanged)."""
        return tuple(self._items) if self._items else ()

    def peek(self) -> list[AgentMessage]:
        """What the next drain would take, without taking it."""
        items = self.snapshot()
        return [item.message for item in (items if self.mode == "all" else items[:1])]

    def edit(self, item_id: str, message: AgentMessage | None) -> bool:
        """Remove (``message`` None) or replace the queued message ``item_id``; False when
        nothing with that id is queued here. Order is kept; a replacement keeps the id."""
        items = self._items
        if not items:
            return False
        for index, item in enumerate(items):
            if item.id == item_id:
                if message is None:
                    del items[index]
                else:
                    items[index] = attrs.evolve(item, message=message)
                return True
        return False
