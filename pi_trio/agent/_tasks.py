"""Which tasks are inside an agent's run (for ``wait_for_idle()``'s self-wait check)."""

from __future__ import annotations

import trio

__all__ = ["inside"]


def inside(run_task: trio.lowlevel.Task, outer: tuple[trio.Nursery, ...]) -> bool:
    """Is the current task ``run_task``, or a task of a nursery opened during its run? (A
    task of a nursery the caller opened *around* ``prompt()``, in ``outer``, is not.)"""
    task: trio.lowlevel.Task | None = trio.lowlevel.current_task()
    while task is not None:
        if task is run_task:
            return True
        nursery = task.parent_nursery
        if nursery is None:
            return False
        if nursery.parent_task is run_task:
            return nursery not in outer
        task = nursery.parent_task
    return False
