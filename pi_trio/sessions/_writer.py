"""A dedicated worker thread that owns a blocking database connection.

Why not ``trio.to_thread.run_sync`` per call: a commit that makes a message durable is on the
critical path of every turn, and measured here a ``to_thread.run_sync`` round trip costs about
twice a bare hand-off to a thread that is already waiting on a queue (the capacity limiter, the
thread cache and the context copy are per call). One thread per store also gives the "one
writer per store" rule for free, and lets the thread take every request queued while it was busy
in one go: appends of many sessions become one transaction (group commit).

Cancellation: a request, once queued, is not abandoned. The caller waits for its outcome even
when cancelled (the cancellation is delivered at the caller's next checkpoint), so a write
either commits or rolls back before the caller goes on, and the thread never outlives
:meth:`DedicatedThread.stop`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import outcome
import trio

__all__ = ["DedicatedThread", "Request"]


class Request:
    """One call for the thread: ``op`` and ``args``; the thread sets ``result``."""

    __slots__ = ("args", "op", "result", "task")

    def __init__(self, op: str, args: tuple[Any, ...], task: trio.lowlevel.Task) -> None:
        self.op = op
        self.args = args
        self.task = task
        self.result: outcome.Outcome[Any] | None = None


_STOP = "__stop__"


class DedicatedThread:
    """Runs ``handle(batch)`` in its own thread for every batch of queued requests.

    ``handle`` gets the requests in submission order and sets each one's ``result``; it is
    called with everything queued since the last batch, so it can group writes. ``setup`` runs
    first in the thread (open the connection), ``teardown`` last (close it).
    """

    def __init__(
        self,
        name: str,
        handle: Callable[[list[Request]], None],
        setup: Callable[[], None],
        teardown: Callable[[], None],
    ) -> None:
        self._name = name
        self._handle = handle
        self._setup = setup
        self._teardown = teardown
        # requests wait in a list; the queue only wakes the thread (one put per batch, not per
        # request: with a thousand agents committing at once, most calls find it awake)
        self._pending: list[Request] = []
        self._lock = threading.Lock()
        self._signalled = False
        self._queue: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stopped = False

    async def start(self) -> None:
        """Start the thread and run ``setup`` in it; its exception is raised here."""
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
        self._thread.start()
        try:
            await self.call("__setup__")
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.stop()
            raise

    async def call(self, op: str, *args: Any) -> Any:
        """Queue ``op(*args)`` and wait for its outcome.

        A cancelled caller is stopped before its request is queued (this is a checkpoint);
        once queued, the request is not abandoned: its outcome is waited for.
        """
        if self._stopped or self._thread is None:
            raise RuntimeError("the session store is closed")
        await trio.lowlevel.checkpoint_if_cancelled()
        request = Request(op, args, trio.lowlevel.current_task())
        with self._lock:
            self._pending.append(request)
            wake = not self._signalled
            self._signalled = True
        if wake:
            self._queue.put(None)
        # reschedule() hands the request's outcome back: a value, or its exception raised here
        return await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)

    async def stop(self) -> None:
        """Run ``teardown`` in the thread and wait until the thread has ended."""
        if self._thread is None or self._stopped:
            return
        try:
            await self.call(_STOP)
        finally:
            self._stopped = True
            thread = self._thread
            await trio.to_thread.run_sync(thread.join)

    def _main(self) -> None:
        token = self._token
        assert token is not None
        while True:
            self._queue.get()
            with self._lock:
                batch, self._pending = self._pending, []
                self._signalled = False
            if not batch:
                continue
            stop = False
            work: list[Request] = []
            for request in batch:
                if request.op == "__setup__":
                    request.result = outcome.capture(self._setup)
                elif request.op == _STOP:
                    stop = True
                else:
                    work.append(request)
            if work:
                try:
                    self._handle(work)
                except BaseException as exc:  # a bug in handle: every caller hears of it
                    for request in work:
                        request.result = outcome.Error(exc)
            if stop:
                for request in batch:
                    if request.op == _STOP:
                        request.result = outcome.capture(self._teardown)
            token.run_sync_soon(_wake, batch)
            if stop:
                return


def _wake(batch: list[Request]) -> None:
    for request in batch:
        result = request.result
        if result is None:  # not run: a bug in the thread's loop, reported to the caller
            result = outcome.Error(RuntimeError(f"session store request {request.op!r} not run"))
        trio.lowlevel.reschedule(request.task, result)
