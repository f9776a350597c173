"""``pt.serve_sessions`` after its LISTEN connection broke (a database restart, an
administrator's ``pg_terminate_backend``): it listens again, and a notification wakes it again,
instead of falling back to polling for the rest of the worker's life."""

from __future__ import annotations

import logging

import pytest
import trio

import pi_trio as pt

from ._helpers import IDLE, answering_options, until
from .conftest import Raw

pytestmark = pytest.mark.slow  # a worker whose LISTEN connection is killed

_LISTENERS = (
    "SELECT pid FROM pg_stat_activity WHERE starts_with(query, 'LISTEN ') "
    "AND datname = current_database() AND pid <> pg_backend_pid()"
)


async def test_a_broken_listen_connection_is_opened_again(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    options = answering_options()

    def logged(text: str) -> bool:
        return any(text in r.getMessage() for r in caplog.records)

    async with (
        pt.open_session_store(postgres_url, lease_ttl=5) as store,
        trio.open_nursery() as nursery,
    ):
        await nursery.start(lambda task_status: pt.serve_sessions(
            store, options, poll_interval=3600, task_status=task_status
        ))  # fmt: skip  # (an hour: only a notification can wake it in this test)
        [(first,)] = raw(_LISTENERS)
        raw("SELECT pg_terminate_backend(?)", first)
        await until(lambda: logged("LISTEN failed"))
        await until(lambda: logged("LISTEN works again"))
        [(second,)] = raw(_LISTENERS)
        assert second != first
        await store.enqueue("s1", "hello")  # its NOTIFY reaches the new connection
        await until(lambda: raw(IDLE) == [(True,)])  # run, not only moved in
        nursery.cancel_scope.cancel()
    async with pt.open_session_store(postgres_url) as store, store.open_agent("s1") as agent:
        assert [m.role for m in agent.state.messages] == ["user", "assistant"]


@pytest.mark.parametrize("poll_interval", [0, -1.0, float("nan")])
async def test_a_poll_interval_that_is_not_positive_is_refused(
    postgres_url: str, poll_interval: float
) -> None:
    # 0 once meant: a claim that fails (the database down) retried in a busy loop, a log line each
    async with pt.open_session_store(postgres_url) as store:
        with (
            trio.fail_after(10),
            pytest.raises(ValueError, match="poll_interval must be a positive"),
        ):
            await pt.serve_sessions(store, {}, poll_interval=poll_interval)
