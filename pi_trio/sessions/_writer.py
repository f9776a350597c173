"""A dedicated worker thread that owns a blocking database connection.

Why not ``trio.to_thread.run_sync`` per call: a commit that makes a message durable is on the
critical path of every turn, and measured here a ``to_thread.run_sync`` round trip costs about
twice a bare hand-off to a thread that is already waiting on a queue (the capacity limiter, the
thread cache and the context copy are per call). One thread per store also gives the "one
writer per store" rule for free, and lets the thread take every request queued while it was busy
in one go: appends of many sessions become one transaction (group commit).

The way back: the thread marks the requests done and writes one byte to a socket that a task
waiting for a result watches with ``trio.lowlevel.wait_readable`` (one task at a time, the
*reader*: it hands every finished request to its waiting caller, and passes the watch on when
its own is done). That is cheaper than ``TrioToken.run_sync_soon``'s way back (measured here
back to back, a bare hop ~86 instead of ~104 µs under load, ~42 instead of ~75 µs when
quiet), because the woken task runs in the same scheduler pass instead of one pass after
Trio's own wake-up task. Nothing spins: an idle store is a thread blocked on a queue and a
socket nobody writes to.

Cancellation: a request, once queued, is not abandoned. The caller waits for its outcome even
when cancelled (the cancellation is delivered at the caller's next checkpoint), so a write
either commits or rolls back before the caller goes on, and the thread never outlives
:meth:`DedicatedThread.stop`.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
from collections.abc import Callable
from typing import Any

import outcome
import trio

__all__ = ["DedicatedThread", "Request"]


class Request:
    """One call for the thread: ``op`` and ``args``; the thread sets ``result``.

    A ``"group"`` request's one argument is a list of requests (:mod:`._group`): the thread
    handles them in its batch, in order, as if each had been queued, and the group's own
    result is None once they all have theirs."""

    __slots__ = ("args", "handed", "op", "result")

    def __init__(self, op: str, args: tuple[Any, ...]) -> None:
        self.op = op
        self.args = args
        self.result: outcome.Outcome[Any] | None = None
        self.handed: outcome.Outcome[Any] | None = None
        """The outcome, once the Trio side has it (set by the reader, in the Trio thread)."""


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
        self._stopped = False
        # the way back (see the module docstring): requests the thread finished, and whether
        # it wrote its wake-up byte since the reader last looked (under _lock)
        self._done: list[Request] = []
        self._woken = False
        self._wake_in: socket.socket | None = None
        self._wake_out: socket.socket | None = None
        self._reading = False  # a task is the reader
        self._waiting: dict[Request, trio.lowlevel.Task] = {}  # parked callers, not the reader

    async def start(self) -> None:
        """Start the thread and run ``setup`` in it; its exception is raised here."""
        self._wake_in, self._wake_out = socket.socketpair()
        self._wake_in.setblocking(False)
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
        once queued, the request is not abandoned: its outcome is waited for. A caller
        cancelled while it waited then gets its value (the cancellation comes at its next
        checkpoint), or, when the request failed, the cancellation instead of the failure.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        return await self.call_queued(op, *args)

    async def call_queued(self, op: str, *args: Any) -> Any:
        """:meth:`call` without its first checkpoint: not cancellable at all (a cancellation
        of the caller comes at its next checkpoint, or instead of the request's failure)."""
        if self._stopped or self._thread is None:
            raise RuntimeError("the session store is closed")
        request = Request(op, args)
        with self._lock:
            self._pending.append(request)
            wake = not self._signalled
            self._signalled = True
        if wake:
            self._queue.put(None)
        result = await self._outcome(request)
        if isinstance(result, outcome.Error):  # a caller cancelled meanwhile hears that
            await trio.lowlevel.checkpoint_if_cancelled()
        return result.unwrap()

    async def _outcome(self, request: Request) -> outcome.Outcome[Any]:
        """Wait for ``request``'s outcome: as the reader, or parked until the reader hands it
        over (or hands over the reading). Not cancellable: the request is not abandoned."""
        while request.handed is None:
            if not self._reading:
                self._reading = True
                try:
                    await self._read_until(request)
                finally:
                    self._reading = False
                    self._pass_reading()
                continue
            self._waiting[request] = trio.lowlevel.current_task()
            # woken with its outcome handed, or to read (the reader before it is done)
            await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)
        return request.handed

    async def _read_until(self, request: Request) -> None:
        """Hand every finished request its outcome (and wake its parked caller) until
        ``request`` has its own."""
        wake_in = self._wake_in
        assert wake_in is not None
        while request.handed is None:
            try:
                await trio.lowlevel.wait_readable(wake_in)
            except trio.Cancelled:
                # Deferred, not swallowed: the request is not abandoned, so wait on, shielded;
                # the caller's scope stays cancelled and its next checkpoint raises it (as for
                # a parked caller, whose abort is refused). A shield on every wait instead
                # would add half a hop's cost to every hop.
                with trio.CancelScope(shield=True):
                    await self._read_until(request)
                return
            except (trio.ClosedResourceError, OSError, ValueError):  # stop() closed it
                request.handed = _closed_error()
                return
            with contextlib.suppress(BlockingIOError):  # a late byte, read already: no news
                wake_in.recv(4096)  # one byte per look (see _finished); more is harmless
            with self._lock:  # after reading the byte: a later finish writes one again
                done, self._done = self._done, []
                self._woken = False
            for finished in done:
                result = finished.result
                if result is None:  # not run: a bug in the thread's loop, told to the caller
                    result = outcome.Error(
                        RuntimeError(f"session store request {finished.op!r} not run")
                    )
                finished.handed = result
                task = self._waiting.pop(finished, None)
                if task is not None:
                    trio.lowlevel.reschedule(task)

    def _pass_reading(self) -> None:
        """The reader is done: wake a parked caller, to read (or to find its outcome)."""
        if self._waiting:
            request = next(iter(self._waiting))
            trio.lowlevel.reschedule(self._waiting.pop(request))

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
            for sock in (self._wake_in, self._wake_out):
                if sock is not None:
                    trio.lowlevel.notify_closing(sock)  # a reader left hears of it
                    sock.close()
            for request, task in self._waiting.items():  # queued after the stop: never run
                request.handed = _closed_error()
                trio.lowlevel.reschedule(task)
            self._waiting.clear()

    def _main(self) -> None:
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
                if request.op == "group":
                    work.extend(request.args[0])
                    request.result = _NOTHING
                elif request.op == "__setup__":
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
            self._finished(batch)
            if stop:
                return

    def _finished(self, batch: list[Request]) -> None:
        """In the thread: hand ``batch`` to the reader (one byte per look, not per batch)."""
        with self._lock:
            self._done.extend(batch)
            write = not self._woken
            self._woken = True
        if write:
            wake_out = self._wake_out
            assert wake_out is not None
            wake_out.send(b"\0")


_NOTHING: outcome.Outcome[Any] = outcome.Value(None)


def _closed_error() -> outcome.Outcome[Any]:
    return outcome.Error(RuntimeError("the session store was closed before this request ran"))
