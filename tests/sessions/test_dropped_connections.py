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
    postgres_server: str, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Past the bound each request fails with SessionStoreError; the bound is the outage's,
    not each request's (reads after it fail at once, not a bound each), and the outage is one
    line; a caller cancelled while its request retried hears its cancellation, not the
    error."""
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    server = Raw("postgresql", postgres_server)  # the database itself is closed to everyone
    database = urllib.parse.urlsplit(postgres_url).path.lstrip("/")
    errors: list[pt.SessionStoreError] = []

    async def load(store: pt.SessionStore, sid: str) -> None:
        try:
            await store.load(sid)
        except pt.SessionStoreError as exc:
            errors.append(exc)

    async with pt.open_session_store(postgres_url, reconnect_for=1, connections=1) as store:
        server(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
        try:
            server(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ?",
                database,
            )
            with trio.move_on_after(0.1) as scope:  # cancelled while its request retries
                await store.load("first")
            assert scope.cancelled_caught  # Cancelled came out, not SessionStoreError
            async with trio.open_nursery() as nursery:  # the same outage: no new bound
                for n in range(5):
                    nursery.start_soon(load, store, f"s{n}")
        finally:
            server(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
        assert sorted(e.session_id for e in errors) == [f"s{n}" for n in range(5)]
        caught = errors[0]
        assert isinstance(caught, pt.SessionStoreError) and caught.problem == "connection lost"
        assert f"session {caught.session_id!r}" in str(caught) and "within 1 s" in str(caught)
        assert isinstance(caught, pt.SessionLogError)  # what callers caught before
        assert len(_lost_records(caplog)) == 1  # one outage, one line
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
    """The store fails the open of a claimed session (here a lock timeout: the test holds an
    uncommitted entry where the open's first commit goes) while the database itself is fine:
    the worker says so in one line and gives the session back still pending, with its inbox,
    where it used to set it aside until new input came; it runs once the store lets it."""
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    database = urllib.parse.urlsplit(postgres_url).path.lstrip("/")
    server = Raw("postgresql", postgres_server)
    server(f"ALTER DATABASE {database} SET lock_timeout = '300ms'")  # the worker's connections
    import psycopg

    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("s1", "hello")
    with psycopg.connect(postgres_url) as blocker:
        blocker.execute(
            "INSERT INTO pi_trio_entries (session_id, seq, kind, data, time, epoch, version) "
            "VALUES ('s1', 1, 'run_start', '{}', 0, 0, 1)"
        )  # uncommitted: the open's commit of seq 1 waits on it, then times out
        async with (
            pt.open_session_store(postgres_url) as store,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(lambda: pt.serve_sessions(
                store, answering_options(), poll_interval=0.2
            ))  # fmt: skip
            said = "it stays pending, to be claimed again"
            await until(lambda: _saying(caplog, said))
            failed = _saying(caplog, said)[0]  # one line, no traceback
            assert failed.exc_info is None and "\n" not in failed.getMessage()
            assert "LockNotAvailable" in failed.getMessage()
            await until(lambda: raw("SELECT holder FROM pi_trio_sessions") == [(None,)])
            assert raw("SELECT pending FROM pi_trio_sessions") == [(True,)]  # not parked
            assert raw("SELECT count(*) FROM pi_trio_inbox") == [(1,)]
            blocker.rollback()
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
    assert raw("SELECT count(*) FROM pi_trio_sessions WHERE pending") == [(0,)]
