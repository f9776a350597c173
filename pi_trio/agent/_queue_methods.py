"""The Agent's queue methods: steering and follow-up messages, queued between turns."""

from __future__ import annotations

from ..messages import AgentMessage
from ._inbox import QueuedMessage
from ._queues import Queues
from ._texts import as_message

__all__ = ["QueueMethods"]


class QueueMethods:
    """``steer``, ``follow_up`` and the queue edits of :class:`pt.Agent` (its two queues)."""

    _queues: Queues

    def steer(self, message: AgentMessage | str) -> QueuedMessage:
        """Queue a message to inject after the current turn (never mid-turn); returns its
        queue record (its ``id`` works with :meth:`remove_queued`, :meth:`replace_queued`)."""
        return self._queues.put("steer", as_message(message, "steer()"))

    def follow_up(self, message: AgentMessage | str) -> QueuedMessage:
        """Queue a message to run only once the agent would otherwise stop; returns its queue
        record."""
        return self._queues.put("follow_up", as_message(message, "follow_up()"))

    def clear_steering_queue(self) -> None:
        self._queues.clear("steer")

    def clear_follow_up_queue(self) -> None:
        self._queues.clear("follow_up")

    def queued(self) -> tuple[QueuedMessage, ...]:
        """A snapshot of both queues: the steering messages, then the follow-ups, in order."""
        return (*self._queues.steering.snapshot(), *self._queues.follow_ups.snapshot())

    def peek_queued_messages(self) -> list[AgentMessage]:
        """What the next poll would take, without taking it (pi 0.87's
        ``peekQueuedMessages``): the steering queue's next message(s) if any, else the
        follow-up queue's."""
        return self._queues.steering.peek() or self._queues.follow_ups.peek()

    def remove_queued(self, item_id: str) -> None:
        """Take back a queued message the run has not taken yet.

        Raises:
            KeyError: nothing with that id is queued (a run may have taken it already).
        """
        self._queues.edit(item_id, None)

    def replace_queued(self, item_id: str, message: AgentMessage | str) -> None:
        """Rewrite a queued message in place (same id, same position).

        Raises:
            KeyError: nothing with that id is queued (a run may have taken it already).
        """
        self._queues.edit(item_id, as_message(message, "replace_queued()"))

    def clear_all_queues(self) -> None:
        self.clear_steering_queue()
        self.clear_follow_up_queue()

    def has_queued_messages(self) -> bool:
        return self._queues.any_queued()
