"""The steering and follow-up inboxes: unbounded trio memory channels.

``put`` is a synchronous ``send_nowait`` (it never blocks and never fails while the agent
exists); the loop drains with ``receive_nowait`` until ``WouldBlock``. A message stays in the
channel until a poll takes it, and a poll records what it takes in the transcript at once, so
aborting a run loses no queued message: it is either still queued or already in the transcript.
"""

from __future__ import annotations

import math
from typing import Literal, TypeAlias

import trio

from ..messages import AgentMessage

__all__ = ["Inbox", "QueueMode"]

QueueMode: TypeAlias = Literal["one-at-a-time", "all"]


class Inbox:
    """A queue of messages for the agent, drained one at a time or all at once."""

    __slots__ = ("_receive", "_send", "mode")

    def __init__(self, mode: QueueMode) -> None:
        self.mode: QueueMode = mode
        self._send, self._receive = trio.open_memory_channel[AgentMessage](math.inf)

    def put(self, message: AgentMessage) -> None:
        self._send.send_nowait(message)

    def __len__(self) -> int:
        return self._receive.statistics().current_buffer_used

    def drain(self) -> list[AgentMessage]:
        """Take the next message ("one-at-a-time") or every queued one ("all")."""
        taken: list[AgentMessage] = []
        while self.mode == "all" or not taken:
            try:
                taken.append(self._receive.receive_nowait())
            except trio.WouldBlock:
                break
        return taken

    def clear(self) -> None:
        while True:
            try:
                self._receive.receive_nowait()
            except trio.WouldBlock:
                return
