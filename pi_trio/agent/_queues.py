"""``Queues``: an agent's two inboxes, and who is told when they change.

Every change (queued, removed, replaced, cleared, drained by a run) is reported, synchronously,
to the recorder (a durable store logs it) and, as a :class:`pt.QueueUpdate`, to the agent's
``events()`` channels. A removal or replacement is reported to the recorder as the queue
cleared and refilled, so its log stays a plain sequence of puts and clears.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from .._callbacks import call_maybe_async
from ..events import QueueUpdate
from ..loop import GetMessages
from ..messages import AgentMessage
from ._delivery import Delivery
from ._inbox import Inbox, QueuedMessage, QueueKind
from ._recorder import Recorder

__all__ = ["Queues"]

Change = Literal["queued", "removed", "replaced", "cleared", "drained"]


class Queues:
    """The steering and follow-up inboxes of one agent."""

    __slots__ = ("_delivery", "_queued", "follow_ups", "steering")

    def __init__(self, delivery: Delivery) -> None:
        self.steering = Inbox("steer", "one-at-a-time")  # the agent's settings set the modes
        self.follow_ups = Inbox("follow_up", "one-at-a-time")
        self._delivery = delivery
        self._queued = 0  # messages ever queued: ids are unique per agent, across both queues

    def any_queued(self) -> bool:
        return len(self.steering) > 0 or len(self.follow_ups) > 0

    def inbox(self, kind: QueueKind) -> Inbox:
        return self.steering if kind == "steer" else self.follow_ups

    def put(self, kind: QueueKind, message: AgentMessage) -> QueuedMessage:
        recorder = self._delivery.recorder
        if recorder is not None:  # first: a recorder that refuses the message keeps it out
            recorder.queued(kind, message)
        self._queued += 1
        item = self.inbox(kind).put(message, self._queued)
        self._notify(kind, "queued")
        return item

    def clear(self, kind: QueueKind) -> None:
        self.inbox(kind).clear()
        recorder = self._delivery.recorder
        if recorder is not None:
            recorder.cleared(kind)
        self._notify(kind, "cleared")

    def edit(self, item_id: str, message: AgentMessage | None) -> None:
        """Remove (``message`` None) or replace one queued message, by id.

        Raises:
            KeyError: nothing with that id is queued (a run may have taken it already).
        """
        for inbox in (self.steering, self.follow_ups):
            if inbox.edit(item_id, message):
                recorder = self._delivery.recorder
                if recorder is not None:
                    recorder.cleared(inbox.kind)
                    for item in inbox.snapshot():
                        recorder.queued(inbox.kind, item.message)
                self._notify(inbox.kind, "removed" if message is None else "replaced")
                return
        raise KeyError(
            f"no queued message has id {item_id!r}: a run may have taken it already "
            "(agent.queued() lists what is still queued)"
        )

    def drainer(self, kind: QueueKind) -> Callable[[], list[AgentMessage]]:
        """The loop's poll of that queue (reports what it took)."""
        return _Drain(self, kind)

    def pollers(self, *, skip_first_steering_poll: bool = False) -> tuple[GetMessages, GetMessages]:
        """The loop's ``get_steering_messages`` and ``get_follow_up_messages`` for one run.

        With a recorder, each poll first awaits its ``flush()``: a queued message is durable
        before a run can take it. ``skip_first_steering_poll``: the run's first steering poll
        takes nothing (``continue_()`` already took its prompt from that queue).
        """
        get_steering: GetMessages = _Drain(self, "steer", skip_first=skip_first_steering_poll)
        get_follow_ups: GetMessages = _Drain(self, "follow_up")
        recorder = self._delivery.recorder
        if recorder is not None:
            get_steering = _flushed_first(recorder, self.inbox("steer"), get_steering)
            get_follow_ups = _flushed_first(recorder, self.inbox("follow_up"), get_follow_ups)
        return get_steering, get_follow_ups

    def _notify(self, kind: QueueKind, change: Change) -> None:
        delivery = self._delivery
        if delivery.subscriptions:
            delivery.offer(QueueUpdate(kind, change, self.inbox(kind).snapshot()))


class _Drain:
    """One queue's poll: takes what the inbox gives (reports it), or nothing the first time
    when ``skip_first``. An object, not a closure: one allocation per run instead of a
    function, its cells and its closure tuple (a run of each of thousands of agents holds two)."""

    __slots__ = ("_inbox", "_kind", "_queues", "_skip")

    def __init__(self, queues: Queues, kind: QueueKind, *, skip_first: bool = False) -> None:
        self._queues = queues
        self._kind: QueueKind = kind
        self._inbox = queues.inbox(kind)
        self._skip = skip_first

    def __call__(self) -> list[AgentMessage]:
        if self._skip:
            self._skip = False
            return []
        taken = self._inbox.drain()
        if taken:
            self._queues._notify(self._kind, "drained")
        return taken


def _flushed_first(recorder: Recorder, inbox: Inbox, drain: GetMessages) -> GetMessages:
    """``drain``, after a flush when there is something to take: a queued message is durable
    before a run takes it. An empty queue's poll (every turn) commits nothing."""

    async def drain_durable() -> Sequence[AgentMessage]:
        if len(inbox):
            await recorder.flush()
        taken: Sequence[AgentMessage] = await call_maybe_async(drain)
        return taken

    return drain_durable
