"""Which tasks each run spawned, and which of them are still alive: a ``trio.abc.Instrument``.

A task belongs to a run when the task that spawned it belongs to the run (the run's own task
counts), wherever it was spawned: in the run's nurseries, in a nursery the run got from outside,
or as a system task. So runs that overlap (``concurrency > 1``) are told apart, and a task a
tool leaks into someone else's nursery is still blamed on the run that started it.
"""

from __future__ import annotations

import collections
import logging

import trio

__all__ = ["FailureLog", "RunTasks", "task_names"]


class RunTasks(trio.abc.Instrument):
    """Tracks the live tasks of each registered run (install with ``add_instrument``)."""

    def __init__(self) -> None:
        self._roots: dict[trio.lowlevel.Task, int] = {}
        self._owner: dict[trio.lowlevel.Task, int] = {}
        self._alive: dict[int, set[trio.lowlevel.Task]] = {}

    def begin(self, run: int, root: trio.lowlevel.Task) -> None:
        """From now on, tasks that ``root`` (or its tasks) spawn belong to ``run``."""
        self._roots[root] = run
        self._alive[run] = set()

    def alive(self, run: int) -> set[trio.lowlevel.Task]:
        """The tasks of ``run`` that have not exited yet."""
        return set(self._alive.get(run, ()))

    def run_of(self, task: trio.lowlevel.Task) -> int | None:
        """The run ``task`` belongs to (its root task included), if any."""
        run = self._owner.get(task)
        return self._roots.get(task) if run is None else run

    def end(self, run: int, root: trio.lowlevel.Task) -> None:
        """Stop tracking ``run`` (its tasks still alive are forgotten)."""
        self._roots.pop(root, None)
        for task in self._alive.pop(run, ()):
            self._owner.pop(task, None)

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        try:
            spawner = trio.lowlevel.current_task()
        except RuntimeError:  # spawned by the run loop itself (its init or system tasks)
            return
        run = self._owner.get(spawner)
        if run is None:
            run = self._roots.get(spawner)
        if run is not None and run in self._alive:
            self._owner[task] = run
            self._alive[run].add(task)

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        run = self._owner.pop(task, None)
        if run is not None and run in self._alive:
            self._alive[run].discard(task)


def task_names(tasks: set[trio.lowlevel.Task]) -> list[str]:
    """The tasks' names, sorted, each once with its count when several tasks share it (a
    task's name is its function's qualified name by default)."""
    counts = collections.Counter(task.name for task in tasks)
    return [name if n == 1 else f"{name} (x{n})" for name, n in sorted(counts.items())]


class FailureLog(logging.Handler):
    """Collects the ERROR records pi_trio logs (a listener, hook or sink that raised), each
    credited to the run whose task logged it (install on the ``pi_trio`` logger)."""

    def __init__(self, tracker: RunTasks) -> None:
        super().__init__(logging.ERROR)
        self._tracker = tracker
        self.by_run: dict[int, list[str]] = collections.defaultdict(list)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            task = trio.lowlevel.current_task()
        except RuntimeError:
            return
        run = self._tracker.run_of(task)
        if run is None:
            return
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        self.by_run[run].append(text)
