"""An inbox row (``store.enqueue()``, ``store.approve()``) that a holder moves into its log is
deleted by the commit that logs it, exactly once: also when that commit failed and a later one
logs it, and when the decision it carries is logged as ignored (the call no longer waits).

A row left behind keeps its session pending: every later holder would log it again, and a
``serve_sessions`` worker would claim the session over and over."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import trio

import pi_trio as pt
from pi_trio.sessions._backend import Lease, Row

from ._approval_child import REFUND_CALL, SESSION, options
from ._helpers import until
from .conftest import Raw


@contextlib.asynccontextmanager
async def _holder_and_other(url: str) -> AsyncIterator[tuple[pt.SessionStore, pt.SessionStore]]:
    """Two stores on one database: the holder's, whose keeper pulls the session's inbox every
    0.5 s, and another process's, which puts rows in that inbox."""
    async with (
        pt.open_session_store(url, lease_ttl=1.5) as holder,
        pt.open_session_store(url, lease_ttl=1.5) as other,
    ):
        yield holder, other


def _fail_the_first_move(store: pt.SessionStore, then_wait: float = 0.0) -> list[list[int]]:
    """Make the first commit that deletes inbox rows (the keeper's move) fail, and the later
    ones wait ``then_wait`` seconds first (a lock wait); the ids the failed one carried are
    appended to the list returned. Its rows and entries stay pending."""
    backend = store.backend
    append = backend.append
    failed: list[list[int]] = []

    async def fails_once(lease: Lease, rows: Sequence[Row], inbox: Sequence[int] = ()) -> None:
        if inbox and not failed:
            failed.append(list(inbox))
            raise OSError("disk full, once")
        if inbox:
            await trio.sleep(then_wait)
        await append(lease, rows, inbox)

    backend.append = fails_once  # type: ignore[method-assign]
    return failed


@contextlib.asynccontextmanager
async def _a_move_failed(
    url: str, tmp_path: Path, then_wait: float = 0.0
) -> AsyncIterator[pt.SessionStore]:
    """An open holder (its store yielded) whose keeper moved an enqueued message in, and whose
    commit of that move failed (:func:`_fail_the_first_move`)."""
    async with (
        _holder_and_other(url) as (holder, other),
        holder.open_agent(SESSION, **options(tmp_path / "side", False)),
    ):
        failed = _fail_the_first_move(holder, then_wait)
        await other.enqueue(SESSION, "later")
        await until(lambda: bool(failed), seconds=5)
        yield holder


def _ignored(entries: Sequence[pt.SessionEntry]) -> list[pt.SessionEntry]:
    return [e for e in entries if e.kind == "decision" and e.data.get("ignored")]


async def test_a_store_decision_moved_in_by_the_holder_is_deleted(
    postgres_url: str, tmp_path: Path
) -> None:
    raw = Raw("postgresql", postgres_url)
    async with (
        _holder_and_other(postgres_url) as (holder, other),
        holder.open_agent(SESSION, **options(tmp_path / "side", False)) as agent,
    ):
        await agent.prompt("refund order 17")
        await other.approve(SESSION, REFUND_CALL)  # held elsewhere: goes to the inbox
        await until(lambda: not agent.state.pending_approvals, seconds=5)  # the keeper's pull
        assert agent.recorder is not None
        await agent.recorder.flush()
        assert raw("SELECT id FROM pi_trio_inbox") == []


async def test_a_store_decision_about_a_call_decided_here_meanwhile_is_deleted_too(
    postgres_url: str, tmp_path: Path
) -> None:
    raw = Raw("postgresql", postgres_url)
    side = tmp_path / "side"
    async with _holder_and_other(postgres_url) as (holder, other):
        async with holder.open_agent(SESSION, **options(side, False)) as agent:
            await agent.prompt("refund order 17")
            await other.approve(SESSION, REFUND_CALL)  # goes to the inbox
            agent.approve(REFUND_CALL)  # decided here before the keeper pulls the row
            assert agent.recorder is not None
            await agent.recorder.flush()
            with trio.fail_after(5):  # the keeper pulls it (every 0.5 s) and logs it ignored
                while not _ignored(await holder.load(SESSION)):  # noqa: ASYNC110 (its keeper)
                    await trio.sleep(0.05)
            await agent.recorder.flush()
            assert raw("SELECT id FROM pi_trio_inbox") == []
        async with holder.open_agent(SESSION, **options(side, True)):
            await trio.sleep(0.6)  # a keeper's pull or more: nothing is left to take
        assert len(_ignored(await holder.load(SESSION))) == 1
        assert raw("SELECT id FROM pi_trio_inbox") == []


async def test_inbox_rows_whose_commit_failed_are_deleted_by_the_commit_that_logs_them(
    postgres_url: str, tmp_path: Path
) -> None:
    raw = Raw("postgresql", postgres_url)
    async with _holder_and_other(postgres_url) as (holder, other):
        async with holder.open_agent(SESSION, **options(tmp_path / "side", False)) as agent:
            failed = _fail_the_first_move(holder)
            await other.enqueue(SESSION, "later")
            await other.enqueue(SESSION, "and later")
            await until(lambda: bool(failed), seconds=5)
            assert len(raw("SELECT id FROM pi_trio_inbox")) == 2  # not deleted by the failure
            assert agent.recorder is not None
            await agent.recorder.flush()  # logs the two queued entries: deletes both rows
            assert raw("SELECT id FROM pi_trio_inbox") == []
        assert [e.kind for e in await holder.load(SESSION)].count("queued") == 2


async def test_the_keeper_tries_a_failed_move_again_while_the_session_is_idle(
    postgres_url: str, tmp_path: Path
) -> None:
    raw = Raw("postgresql", postgres_url)
    async with _a_move_failed(postgres_url, tmp_path) as holder:
        # nothing else flushes: the keeper's next renewal commits the moved row itself
        await until(lambda: raw("SELECT id FROM pi_trio_inbox") == [], seconds=5)
        assert [e.kind for e in await holder.load(SESSION)].count("queued") == 1


@pytest.mark.slow  # waits through lease renewals
async def test_a_slow_commit_of_moved_rows_does_not_hold_up_the_lease_renewals(
    postgres_url: str, tmp_path: Path
) -> None:
    raw = Raw("postgresql", postgres_url)
    async with _a_move_failed(postgres_url, tmp_path, then_wait=4.0):  # the retry waits 4 s
        await trio.sleep(3.0)  # twice the lease's ttl (1.5 s): renewed meanwhile, not lost
    assert raw("SELECT id FROM pi_trio_inbox") == []  # the slow retry went through
