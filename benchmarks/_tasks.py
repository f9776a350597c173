"""Counting Trio tasks, to find any that outlive the run that spawned them."""

from __future__ import annotations

import trio


class TaskTracker(trio.abc.Instrument):
    """Every task alive in this ``trio.run`` (install with ``trio.lowlevel.add_instrument``)."""

    def __init__(self) -> None:
        self.live: set[trio.lowlevel.Task] = set()
        self.spawned = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.live.add(task)
        self.spawned += 1

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self.live.discard(task)


async def start_tracking() -> TaskTracker:
    tracker = TaskTracker()
    trio.lowlevel.add_instrument(tracker)
    await trio.lowlevel.checkpoint()
    return tracker
