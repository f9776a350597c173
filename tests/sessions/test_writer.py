"""The store's dedicated thread (``sessions._writer``): every caller gets its own outcome, a
cancelled caller still gets it, and nothing is left waiting."""

from __future__ import annotations

import threading
import time
from typing import Any

import outcome
import trio
import trio.testing

from pi_trio.sessions._writer import DedicatedThread, Request


def _echo(batch: list[Request]) -> None:
    for request in batch:
        request.result = outcome.Value((request.op, *request.args))


def _echo_one_at_a_time(batch: list[Request]) -> None:
    for request in batch:  # each outcome in a batch of its own: many hand-overs
        request.result = outcome.Value((request.op, *request.args))
        time.sleep(0)


async def test_many_callers_each_get_their_own_outcome() -> None:
    # callers come and go while others wait: the reading is handed from caller to caller,
    # and an outcome that arrives for a caller not parked (being woken to read) is kept
    thread = DedicatedThread("test writer", _echo_one_at_a_time, lambda: None, lambda: None)
    await thread.start()
    got: dict[int, list[Any]] = {}

    async def caller(index: int) -> None:
        for turn in range(50):
            got.setdefault(index, []).append(await thread.call("op", index, turn))
            if turn % 3 == index % 3:
                await trio.lowlevel.checkpoint()

    with trio.fail_after(60):  # a lost outcome hangs: fail instead of waiting forever
        async with trio.open_nursery() as nursery:
            for index in range(60):
                nursery.start_soon(caller, index)
        await thread.stop()
    assert got == {i: [("op", i, turn) for turn in range(50)] for i in range(60)}


def _gated(batch: list[Request]) -> None:
    for request in batch:
        gate = request.args[0]
        if gate is not None:
            gate.wait()
        request.result = outcome.Value(request.op)


async def _hand_over(thread: DedicatedThread) -> None:
    gate_a, gate_c = threading.Event(), threading.Event()
    got: list[str] = []

    async def first() -> None:
        got.append(await thread.call("a", gate_a))
        gate_c.set()
        # blocking the Trio thread on purpose: nothing else runs until C's outcome is in
        while not any(r.op == "c" for r in thread._done):
            time.sleep(0.001)  # noqa: ASYNC251
        got.append(await thread.call("d", None))

    async def second() -> None:
        got.append(await thread.call("c", gate_c))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await trio.testing.wait_all_tasks_blocked()
        # the thread took A's request (state of another thread: no trio.Event to wait on), so
        # C's comes in a batch of its own
        while thread._pending:  # noqa: ASYNC110
            await trio.sleep(0.001)
        nursery.start_soon(second)
        await trio.testing.wait_all_tasks_blocked()
        gate_a.set()
    assert sorted(got) == ["a", "c", "d"]


async def _hand_over_twenty_times() -> None:
    thread = DedicatedThread("test writer", _gated, lambda: None, lambda: None)
    await thread.start()
    for _ in range(20):  # the two orders are chosen at random by Trio's scheduler
        await _hand_over(thread)
    await thread.stop()


async def test_an_outcome_for_a_caller_woken_to_read_is_kept() -> None:
    # A reads; C is parked behind it. A's outcome arrives, A wakes C to read in its place and
    # at once calls again, reading itself; C's outcome is there already. Whichever of A and
    # C runs first, C gets its outcome (it was once dropped when A ran first: C hung, and a
    # parked caller cannot be cancelled, so the scenario runs in a Trio run of its own).
    with trio.fail_after(60):
        await trio.to_thread.run_sync(trio.run, _hand_over_twenty_times, abandon_on_cancel=True)


async def test_a_cancelled_caller_gets_its_outcome_then_the_cancellation() -> None:
    release = threading.Event()

    def slow(batch: list[Request]) -> None:
        release.wait()
        _echo(batch)

    thread = DedicatedThread("test writer", slow, lambda: None, lambda: None)
    await thread.start()
    got: list[Any] = []
    reached: list[str] = []

    async def caller(scope: trio.CancelScope) -> None:
        with scope:
            got.append(await thread.call("write", 1))  # the reader, cancelled while waiting
            reached.append("after the call")
            await trio.lowlevel.checkpoint()
            reached.append("after a checkpoint")  # never: the cancellation is raised there

    async def parked(scope: trio.CancelScope) -> None:
        with scope:
            got.append(await thread.call("write", 2))  # parked behind the reader
            await trio.lowlevel.checkpoint()

    first, second = trio.CancelScope(), trio.CancelScope()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller, first)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(parked, second)
            await trio.testing.wait_all_tasks_blocked()
            first.cancel()
            second.cancel()
            await trio.testing.wait_all_tasks_blocked()
            release.set()  # both writes run only now
        await thread.stop()
    assert sorted(got) == [("write", 1), ("write", 2)]  # neither outcome was abandoned
    assert reached == ["after the call"]
    assert first.cancelled_caught and second.cancelled_caught
