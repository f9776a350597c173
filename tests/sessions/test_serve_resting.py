"""A worker and the sessions the store failed, on PostgreSQL: a session that failed while a
claim was on its way is given back pending rather than run before it is due; an
``agent_options`` function the store failed leaves its session pending, not set aside; and a
``SystemExit`` from a run reaches ``serve_sessions``' caller as itself, not as a group."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.sessions._holders import new_holder
from pi_trio.sessions._serve import _Resting, _Worker

from ._helpers import IDLE, answering_options, until
from .conftest import Raw

pytestmark = pytest.mark.slow  # workers on PostgreSQL


async def test_a_session_claimed_while_it_rests_is_given_back_pending(postgres_url: str) -> None:
    raw = Raw("postgresql", postgres_url)
    asked: list[str] = []

    def options(session_id: str) -> dict[str, Any]:
        asked.append(session_id)
        return answering_options()

    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("s1", "hello")
        resting = _Resting(poll_interval=60)
        worker = _Worker(store, store.backend, options, 1, resting)  # type: ignore[arg-type]
        [lease] = await store.backend.claim(new_holder("w"), 1)  # type: ignore[attr-defined]
        resting.failed("s1", trio.current_time())  # failed while this claim was on its way
        worker.running = 1
        await worker.run_one(lease, trio.current_time())
    assert asked == [] and worker.running == 0
    assert raw("SELECT holder, pending FROM pi_trio_sessions") == [(None, True)]


async def test_options_the_store_failed_leave_the_session_pending(postgres_url: str) -> None:
    raw = Raw("postgresql", postgres_url)
    asked: list[str] = []

    def options(session_id: str) -> dict[str, Any]:
        asked.append(session_id)
        if len(asked) == 1:  # read from the store, say, while it failed
            raise pt.SessionStoreError("the store is read-only", session_id=session_id)
        return answering_options()

    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("s1", "hello")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: pt.serve_sessions(store, options, poll_interval=0.05))
            await until(lambda: len(asked) == 2 and raw(IDLE) == [(True,)])  # before: set aside
            nursery.cancel_scope.cancel()
        async with store.open_agent("s1") as agent:
            assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_a_system_exit_from_a_run_reaches_the_caller_as_itself(postgres_url: str) -> None:
    def options(session_id: str) -> dict[str, Any]:
        raise SystemExit(3)

    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("s1", "hello")
        with pytest.raises(SystemExit) as caught:
            await pt.serve_sessions(store, options, poll_interval=0.05)
    assert caught.value.code == 3
