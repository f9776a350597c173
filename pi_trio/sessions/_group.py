"""Grouped commits: one transaction for every session's pending appends, one wake-up for it.

A store's recorders (one per agent) do not each send their rows to the store's thread: they
put them in the store's *open batch* and wait for it. The first to join a batch leads it: it
lets the tasks that are runnable in the same scheduler pass join too (one checkpoint, unless
the last batch was one append: one agent alone), closes the batch, hands the whole batch to
the store's thread as ONE request (:mod:`._writer`: one hop there and one back, whatever the
number of sessions), and wakes every waiter with its own outcome. While a batch is being
committed, the next one fills; its leader waits for a free lane (one per connection) and then
commits everything that arrived meanwhile.

So a durable point waits only for the transaction that holds its entries, and a thousand
agents committing at once cost a handful of transactions and thread hops, not a thousand.
A recorder never has two appends in flight (it waits for its commit before the next), so a
session's rows are committed in order even with several lanes.

Cancellation: an append, once in a batch, is not abandoned (as with :meth:`DedicatedThread.call`):
its caller waits for the batch's outcome, and a caller cancelled meanwhile hears of the
cancellation at its next checkpoint (or instead of the append's failure). The leader's waits
refuse cancellation too: the other members' entries do not depend on its scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import outcome
import trio

from ._writer import DedicatedThread, Request

__all__ = ["GroupCommitter"]


class _Batch:
    """Appends that go into one transaction, and the tasks waiting for it."""

    __slots__ = ("requests", "waiting")

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.waiting: list[trio.lowlevel.Task] = []


class GroupCommitter:
    """Groups a store's appends into batches, one request to one of ``threads`` per batch
    (a pool's threads are its lanes: as many batches in flight as threads, one on each)."""

    def __init__(self, threads: Sequence[DedicatedThread]) -> None:
        self._free = list(reversed(threads))  # the first thread first
        self._open: _Batch | None = None
        self._leaders: list[trio.lowlevel.Task] = []  # waiting for a free lane, in order
        self._last_size = 2  # appends in the last batch (see _lead)
        self.batches = 0
        """Batches committed so far (for tests and benchmarks: grouping at work)."""

    async def append(self, args: tuple[Any, ...]) -> None:
        """Commit ``args`` (``(lease, rows, ...)``, what the backend's ``append`` op takes)
        with every other append pending now, in one transaction; raise its own failure.

        A cancelled caller is stopped before joining a batch (this is a checkpoint); once
        in one, see the module docstring.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        request = Request("append", args)
        batch = self._open
        if batch is None:
            batch = self._open = _Batch()
            batch.requests.append(request)
            await self._lead(batch)
        else:
            batch.requests.append(request)
            batch.waiting.append(trio.lowlevel.current_task())
            await trio.lowlevel.wait_task_rescheduled(_refuse_abort)
        result = request.result
        assert result is not None
        if isinstance(result, outcome.Error):  # a caller cancelled meanwhile hears that
            await trio.lowlevel.checkpoint_if_cancelled()
        result.unwrap()

    async def _lead(self, batch: _Batch) -> None:
        """Commit ``batch`` (its first member runs this) and wake its other members. Not
        cancellable (no shield needed: every wait here refuses an abort)."""
        if not self._free:
            self._leaders.append(trio.lowlevel.current_task())
            await trio.lowlevel.wait_task_rescheduled(_refuse_abort)
        elif self._last_size > 1:
            # the tasks runnable in this scheduler pass join the batch first; after a batch of
            # one append (one agent alone) a pass would only add its cost, and a batch that
            # fills while another is in flight (above) makes the next leader wait again
            await trio.lowlevel.cancel_shielded_checkpoint()
        if self._open is batch:
            self._open = None
        thread = self._free.pop()
        self._last_size = len(batch.requests)
        try:
            await thread.call_queued("group", batch.requests)
        except BaseException as exc:  # the store is closed, or a bug: every member hears
            for request in batch.requests:
                if request.result is None:
                    request.result = outcome.Error(exc)
        finally:
            self._free.append(thread)
            self.batches += 1
            if self._leaders:
                trio.lowlevel.reschedule(self._leaders.pop(0))
            for task in batch.waiting:
                trio.lowlevel.reschedule(task)
        for request in batch.requests:
            if request.result is None:  # not run: a bug in the thread's loop
                request.result = outcome.Error(RuntimeError("session store append not run"))


def _refuse_abort(_: Any) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.FAILED
