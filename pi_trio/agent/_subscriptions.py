"""Memory-channel subscriptions to an agent's events (``agent.events()``).

Each subscriber gets its own channel, fed synchronously from the agent's sink with
``send_nowait``: a slow reader never holds up the run. The bound applies to the frequent
streaming events only: when ``max_buffer_size`` events are waiting, further ``message_update``
and ``tool_execution_update`` events are dropped for that subscriber (counted in ``dropped``);
lifecycle events (starts, ends, turns) are always queued, so a reader that catches up sees
every message and every tool call complete.
"""

from __future__ import annotations

import math

import trio

from ..events import AgentEvent, MessageUpdate, ToolExecutionUpdate

__all__ = ["Subscription"]

_DROPPABLE = (MessageUpdate, ToolExecutionUpdate)


class Subscription:
    """The sending side of one ``agent.events()`` channel."""

    __slots__ = ("_send", "dropped", "max_buffer_size", "receive")

    def __init__(self, max_buffer_size: float) -> None:
        if max_buffer_size < 0:
            raise ValueError("max_buffer_size must be >= 0")
        self.max_buffer_size = max_buffer_size
        self.dropped = 0
        self._send, self.receive = trio.open_memory_channel[AgentEvent](math.inf)

    def offer(self, event: AgentEvent) -> bool:
        """Queue ``event``; False once the reader has closed its end."""
        send = self._send
        if isinstance(event, _DROPPABLE):
            stats = send.statistics()
            full = stats.current_buffer_used >= self.max_buffer_size
            if full and not stats.tasks_waiting_receive:
                self.dropped += 1
                return True
        try:
            send.send_nowait(event)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True

    def close(self) -> None:
        self._send.close()
