"""What PostgreSQL refuses on its own (no dropped connection, so nothing is retried): the
store failing a request for a reason of its own (a read-only server after a failover, a
feature or a privilege missing after a migration) is a :class:`pt.SessionStoreError`, and a
worker leaves the session pending to claim it again once the store lets it; a request's own
rows refused (``DataError``, ``IntegrityError``) is a plain :class:`pt.SessionLogError`, and
the worker sets the session aside."""

from __future__ import annotations

import logging

import pytest
import trio

import pi_trio as pt

from ._helpers import IDLE, answering_options, until
from .conftest import Raw

pytestmark = pytest.mark.slow  # a worker and its poll interval, on PostgreSQL


def _refuse_entries(raw: Raw, sqlstate: str, table: str = "pi_trio_entries") -> None:
    """Every insert into ``table`` fails with ``sqlstate``, as the server would say it."""
    raw(
        "CREATE OR REPLACE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"RAISE EXCEPTION 'refused for the test' USING ERRCODE = '{sqlstate}'; END $$"
    )
    raw(f"CREATE TRIGGER refuse BEFORE INSERT ON {table} EXECUTE FUNCTION refuse()")


@pytest.mark.parametrize(
    ("sqlstate", "name"),
    [
        ("25006", "ReadOnlySqlTransaction"),  # InternalError: a standby after a failover
        ("0A000", "FeatureNotSupported"),  # NotSupportedError
        ("42501", "InsufficientPrivilege"),  # ProgrammingError: a grant missing
    ],
)
async def test_a_store_that_refuses_for_its_own_reasons_leaves_the_session_pending(
    postgres_url: str, caplog: pytest.LogCaptureFixture, sqlstate: str, name: str
) -> None:
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("s1", "hello")
        _refuse_entries(raw, sqlstate)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: pt.serve_sessions(
                store, answering_options(), poll_interval=0.2
            ))  # fmt: skip
            said = "it stays pending, to be claimed again"
            await until(lambda: [r for r in caplog.records if said in r.getMessage()])
            await until(lambda: raw("SELECT holder FROM pi_trio_sessions") == [(None,)])
            assert raw("SELECT pending FROM pi_trio_sessions") == [(True,)]  # before: set aside
            raw("DROP TRIGGER refuse ON pi_trio_entries")
            await until(lambda: raw(IDLE) == [(True,)])  # claimed again, and run
            nursery.cancel_scope.cancel()
        async with store.open_agent("s1") as agent:
            assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    with pytest.raises(pt.SessionStoreError) as caught:  # and what a caller of the store gets
        async with pt.open_session_store(postgres_url) as store:
            _refuse_entries(raw, sqlstate)
            async with store.open_agent("s2"):
                pass
    assert caught.value.problem == name and caught.value.session_id == "s2"


async def test_rows_the_server_cannot_take_are_a_log_error_and_set_the_session_aside(
    postgres_url: str,
) -> None:
    raw = Raw("postgresql", postgres_url)
    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("s1", "hello")
        _refuse_entries(raw, "22P05")  # DataError: untranslatable character
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: pt.serve_sessions(
                store, answering_options(), poll_interval=0.2
            ))  # fmt: skip
            await until(
                lambda: raw("SELECT holder, pending FROM pi_trio_sessions") == [(None, False)]
            )
            nursery.cancel_scope.cancel()
        [info] = await store.list_sessions()
        assert info.set_aside
        _refuse_entries(raw, "22P05", "pi_trio_inbox")  # and an enqueue the server refuses
        with pytest.raises(pt.SessionLogError) as caught:
            await store.enqueue("s2", "hello")
    assert not isinstance(caught.value, pt.SessionStoreError)
    assert caught.value.problem == "UntranslatableCharacter" and caught.value.session_id == "s2"


async def test_a_store_failing_a_runs_commit_leaves_the_session_pending(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The answer's commit is refused (a read-only server) after the prompt's went in: the
    worker says the session stays pending, and it does (before: released idle, the prompt
    left unanswered and the run open in the log); once the store takes writes again the next
    claim closes the cut-short run in pi's aborted shape."""
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("s1", "hello")
        raw(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.kind = 'message' AND position('done' IN NEW.data::text) > 0 THEN "
            "RAISE EXCEPTION 'read-only' USING ERRCODE = '25006'; END IF; RETURN NEW; END $$"
        )
        raw(
            "CREATE TRIGGER refuse BEFORE INSERT ON pi_trio_entries FOR EACH ROW "
            "EXECUTE FUNCTION refuse()"
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: pt.serve_sessions(
                store, answering_options("done"), poll_interval=0.2
            ))  # fmt: skip
            said = "it stays pending, to be claimed again"
            await until(lambda: [r for r in caplog.records if said in r.getMessage()])
            await until(lambda: raw("SELECT holder FROM pi_trio_sessions") == [(None,)])
            assert raw("SELECT pending FROM pi_trio_sessions") == [(True,)]  # as it says
            raw("DROP TRIGGER refuse ON pi_trio_entries")
            await until(lambda: raw(IDLE) == [(True,)])
            nursery.cancel_scope.cancel()
        entries = await store.load("s1")
    messages = [e.data for e in entries if e.kind == "message"]
    assert [(m["role"], m.get("stopReason")) for m in messages] == [
        ("user", None),
        ("assistant", "aborted"),
    ]
    assert entries[-1].kind == "run_end" and entries[-1].data["repaired"] is True


OK_MESSAGES = "SELECT 1 FROM pi_trio_entries WHERE session_id = 'ok' AND kind = 'message'"


async def test_a_session_the_store_keeps_failing_waits_while_the_others_run(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The store refuses one session's rows: the worker runs the other sessions' input as it
    comes (each end and each notification is a claim) without claiming the failing one again
    before it is due (before: claimed and logged at every one of them), and says when it is."""
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    said = "it stays pending, to be claimed again"

    def failures() -> list[str]:
        return [r.getMessage() for r in caplog.records if said in r.getMessage()]

    async with pt.open_session_store(postgres_url) as store:
        raw(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.session_id = 'stuck' THEN "
            "RAISE EXCEPTION 'no grant' USING ERRCODE = '42501'; END IF; RETURN NEW; END $$"
        )
        raw(
            "CREATE TRIGGER refuse BEFORE INSERT ON pi_trio_entries FOR EACH ROW "
            "EXECUTE FUNCTION refuse()"
        )
        await store.enqueue("stuck", "hello")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: pt.serve_sessions(
                store, answering_options(), poll_interval=60
            ))  # fmt: skip
            await until(failures)
            for turn in range(1, 6):
                await store.enqueue("ok", f"message {turn}")
                await until(lambda n=2 * turn: len(raw(OK_MESSAGES)) == n)  # asked, answered
            nursery.cancel_scope.cancel()
    [failure] = failures()
    assert failure.startswith("session 'stuck': ") and "InsufficientPrivilege: no grant" in failure
    assert failure.endswith("to be claimed again in 30 s")  # the longest rest
    assert raw("SELECT pending FROM pi_trio_sessions WHERE session_id = 'stuck'") == [(True,)]
