"""Ctrl-C for every ``pi-trio`` command: cancel the command, then exit with one line and 130.

Trio's default turns SIGINT into a ``KeyboardInterrupt`` raised wherever the program happens to
be, which reaches the top as a long traceback or an exception group. :func:`run_interruptible`
instead takes SIGINT with ``trio.open_signal_receiver`` for the whole command and cancels the
command's scope: a run in progress is aborted through cancellation (the agent closes its
transcript in pi's aborted shape), servers close their listeners and connections, and
``trio.run`` returns normally. A second Ctrl-C while that clean-up is still going on exits at
once (``os._exit``), for a clean-up that hangs.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import trio

__all__ = ["INTERRUPTED", "run_interruptible"]

INTERRUPTED = 130
"""The exit status after Ctrl-C (128 + SIGINT), as shells report it."""

T = TypeVar("T")


class _Interrupted:
    """Filled in by the signal watcher; read after ``trio.run`` returns."""

    def __init__(self) -> None:
        self.value = False


def run_interruptible(
    fn: Callable[[], Awaitable[T]], *, message: str | None = "pi-trio: interrupted"
) -> T | int:
    """``trio.run(fn)``, or :data:`INTERRUPTED` after Ctrl-C (``message`` on stderr, one line).

    Commands that handle SIGINT themselves (``chat``) open their own receiver inside ``fn``,
    which takes precedence while it is open.
    """
    interrupted = _Interrupted()

    async def main() -> T | None:
        with trio.open_signal_receiver(signal.SIGINT) as signals, trio.CancelScope() as scope:
            trio.lowlevel.spawn_system_task(_watch, signals, scope, interrupted)
            return await fn()
        return None

    result = trio.run(main)
    if interrupted.value:
        if message:
            print(message, file=sys.stderr, flush=True)
        return INTERRUPTED
    return result  # type: ignore[return-value]  # None only when interrupted, or T is None


async def _watch(
    signals: AsyncIterator[int],
    scope: trio.CancelScope,
    interrupted: _Interrupted,
) -> None:
    try:
        async for _ in signals:
            if interrupted.value:  # a second Ctrl-C: the clean-up is taking too long
                sys.stderr.write("pi-trio: interrupted again; exiting now\n")
                sys.stderr.flush()
                os._exit(INTERRUPTED)
            interrupted.value = True
            scope.cancel()
    except RuntimeError:  # the command ended (e.g. raised) before this task first ran
        return
