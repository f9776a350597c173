"""A PostgreSQL connection that the server ends (``pg_terminate_backend``: what a failover, a
restart or a proxy's idle timeout does to a client) is replaced and the request run again
where that cannot do it twice: a holder's next turn, its lease's release, a worker opening a
session. Only a database that stays away past ``reconnect_for`` reaches the caller, as
:class:`pt.SessionStoreError`, and a worker then leaves the session pending, never parked."""

from __future__ import annotations

import logging
import urllib.parse

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ._helpers import IDLE, answering_options, until
from .conftest import Raw

KILL_OTHERS = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)

WAITING = (  # the open's read of the inbox (its last step), waiting for the test's lock
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND "
    "wait_event_type = 'Lock' AND query LIKE '%%FROM pi_trio_inbox%%'"
)


def _saying(caplog: pytest.LogCaptureFixture, phrase: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if phrase in r.getMessage()]


def _lost_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return _saying(caplog, "connection was lost")


async def test_a_turn_after_the_server_ended_the_connections_goes_through(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    model = faux.FauxModel([faux.assistant_message("one"), faux.assistant_message("two")])
    async with (
        pt.open_session_store(postgres_url) as store,
        store.open_agent("s", initial_state=pt.AgentState(model=model.model)) as agent,
    ):
        agent.stream_fn = model
        await agent.prompt("first")
        assert raw(KILL_OTHERS) == [(2,)]  # both of the store's connections
        await agent.prompt("second")
        assert agent.state.messages[-1].stop_reason == "stop"
        assert raw(KILL_OTHERS)[0][0] >= 1  # and the block's release at its end
    assert raw("SELECT holder FROM pi_trio_sessions") == [(None,)]
    async with pt.open_session_store(postgres_url) as store, store.open_agent("s") as again:
        assert [m.role for m in again.state.messages] == ["user", "assistant"] * 2
    lost = _lost_records(caplog)
    assert lost and all("\n" not in r.getMessage() and r.exc_info is None for r in lost)
    assert len(lost) <= 4  # one line per connection that was found dropped


async def test_a_database_that_stays_away_is_a_session_store_error(
    postgres_server: str, postgres_url: str
) -> None:
    server = Raw("postgresql", postgres_server)  # the database itself is closed to everyone
    database = urllib.parse.urlsplit(postgres_url).path.lstrip("/")
    async with pt.open_session_store(postgres_url, reconnect_for=0.3) as store:
        server(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
        try:
            server(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ?",
                database,
            )
            with pytest.raises(pt.SessionStoreError) as caught:
                await store.load("s")
        finally:
            server(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
        assert caught.value.problem == "connection lost"
        assert "session 's'" in str(caught.value) and "within 0.3 s" in str(caught.value)
        assert isinstance(caught.value, pt.SessionLogError)  # what callers caught before
        assert await store.load("s") == []  # and back once the database is


async def test_a_worker_whose_connection_drops_while_it_opens_a_session_runs_it(
    postgres_url: str,
) -> None:
    """The drop lands in the open's read of the inbox (after the claim, the log's read and the
    first commit): the table is locked until the read waits on it, then that connection is
    ended."""
    raw = Raw("postgresql", postgres_url)
    import psycopg

    async with (
        pt.open_session_store(postgres_url, connections=1) as store,
        trio.open_nursery() as nursery,
    ):
        with psycopg.connect(postgres_url) as locker:
            await store.enqueue("s1", "hello")
            locker.execute("LOCK TABLE pi_trio_inbox IN ACCESS EXCLUSIVE MODE")
            nursery.start_soon(pt.serve_sessions, store, answering_options())
            await until(lambda: raw(WAITING))
            [(pid,)] = raw(WAITING)
            raw(f"SELECT pg_terminate_backend({pid})")
            locker.rollback()  # the lock goes; the worker's new connection reads the log
        await until(lambda: raw(IDLE) == [(True,)])
        nursery.cancel_scope.cancel()
    async with pt.open_session_store(postgres_url) as store, store.open_agent("s1") as agent:
        assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_a_worker_leaves_a_session_pending_when_the_store_fails_its_open(
    postgres_server: str, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The database stays away past the bound while the worker opens a claimed session: the
    open fails with a SessionStoreError, and the give-back (once the database is back) keeps
    the session pending with its inbox, so the worker runs it on a later claim."""
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    server = Raw("postgresql", postgres_server)
    database = urllib.parse.urlsplit(postgres_url).path.lstrip("/")
    import psycopg

    async with (
        pt.open_session_store(postgres_url, connections=1, reconnect_for=2) as store,
        trio.open_nursery() as nursery,
    ):
        with psycopg.connect(postgres_url) as locker:
            await store.enqueue("s1", "hello")
            locker.execute("LOCK TABLE pi_trio_inbox IN ACCESS EXCLUSIVE MODE")
            nursery.start_soon(lambda: pt.serve_sessions(
                store, answering_options(), poll_interval=0.05
            ))  # fmt: skip
            await until(lambda: raw(WAITING))
            server(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
            try:
                server(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ? "
                    "AND pid <> ?",
                    database,
                    locker.info.backend_pid,
                )
                # the open gives up after 2 s; its give-back then finds the database away too
                await until(lambda: _saying(caplog, "during release of session 's1'"))
            finally:
                server(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
            locker.rollback()  # the give-back reads the inbox too
        await until(lambda: _saying(caplog, "session 's1' failed"))
        [failed] = _saying(caplog, "session 's1' failed")
        assert failed.exc_info and isinstance(failed.exc_info[1], pt.SessionStoreError)
        # parked (not pending) it would never run, its inbox row kept: claimed again instead
        await until(lambda: raw(IDLE) == [(True,)])  # claimed again, and run
        nursery.cancel_scope.cancel()
    async with pt.open_session_store(postgres_url) as store, store.open_agent("s1") as agent:
        assert [m.role for m in agent.state.messages] == ["user", "assistant"]


@pytest.mark.slow  # ten seconds of connections killed every second
async def test_connections_killed_every_second_while_100_sessions_run(postgres_url: str) -> None:
    """Every connection of the database (the workers', the listeners', the enqueuer's) is
    ended once a second while 100 prompts arrive and run: each is answered once, and no
    session is left parked or held."""
    raw = Raw("postgresql", postgres_url)
    unknown: list[str] = []  # enqueues whose COMMIT the kill cut: queued or not, unknown
    async with (
        pt.open_session_store(postgres_url, lease_ttl=5) as workers,
        pt.open_session_store(postgres_url) as clients,
        trio.open_nursery() as nursery,
    ):
        for _ in range(2):
            nursery.start_soon(lambda: pt.serve_sessions(
                workers, answering_options(), concurrency=8, poll_interval=0.2
            ))  # fmt: skip

        async def kill_every_second() -> None:
            for _ in range(10):
                await trio.sleep(1)
                await trio.to_thread.run_sync(raw, KILL_OTHERS)

        async with trio.open_nursery() as faults:
            faults.start_soon(kill_every_second)
            for n in range(100):
                try:
                    await clients.enqueue(f"s{n}", f"prompt {n}")
                except pt.SessionStoreError as exc:
                    assert exc.problem == "commit outcome unknown", exc
                    unknown.append(f"s{n}")
                await trio.sleep(0.1)
        await until(lambda: raw(IDLE) == [(True,)], seconds=60)
        nursery.cancel_scope.cancel()
    answered = dict(
        raw(
            'SELECT session_id, count(*) FILTER (WHERE data::text LIKE \'%%"role":"assistant"%%\')'
            " FROM pi_trio_entries WHERE kind = 'message' GROUP BY session_id"
        )
    )
    for n in range(100):
        sid = f"s{n}"
        if sid in unknown:
            assert answered.get(sid, 0) <= 1, sid
        else:
            assert answered.get(sid) == 1, (sid, answered.get(sid))
    assert len(unknown) <= 5, unknown  # a kill must land inside a COMMIT to cut one
    assert raw("SELECT count(*) FROM pi_trio_sessions WHERE pending") == [(0,)]
