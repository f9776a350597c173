"""``pt.serve_sessions`` while its database fails: the claims back off, the first failure is
logged with its traceback and the next ones in one line each, and the worker says when
claiming works again (and then runs what was queued)."""

from __future__ import annotations

import logging
import re

import pytest
import trio

import pi_trio as pt

from ._helpers import IDLE, answering_options, until
from .conftest import Raw


def _claim_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("claiming sessions")]


async def test_failing_claims_back_off_and_log_one_traceback(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    options = answering_options()
    async with pt.open_session_store(postgres_url, lease_ttl=5) as store:
        raw("ALTER TABLE pi_trio_sessions RENAME TO pi_trio_sessions_away")  # claims now fail
        async with trio.open_nursery() as nursery:
            await nursery.start(lambda task_status: pt.serve_sessions(
                store, options, poll_interval=0.01, task_status=task_status
            ))  # fmt: skip
            await until(lambda: len(_claim_records(caplog)) >= 4)
            failed = _claim_records(caplog)[:4]
            raw("ALTER TABLE pi_trio_sessions_away RENAME TO pi_trio_sessions")
            await store.enqueue("s1", "hello")
            await until(lambda: "works again" in _claim_records(caplog)[-1].getMessage())
            await until(lambda: raw(IDLE) == [(True,)])  # run, not only moved in
            nursery.cancel_scope.cancel()
    messages = [r.getMessage() for r in failed]
    assert [r.levelno for r in failed] == [logging.ERROR] * 4
    assert failed[0].exc_info is not None  # the first one with its traceback...
    assert [r.exc_info for r in failed[1:]] == [None] * 3  # ...the next ones in a line each
    assert not [m for m in messages if "\n" in m]
    assert messages[0] == "claiming sessions failed; retrying in 0.01 s"
    assert re.fullmatch(
        r"claiming sessions failed again \(2 in a row\): .*pi_trio_sessions.*; "
        r"retrying in 0\.02 s",
        messages[1],
    ), messages[1]
    assert [m.rpartition("retrying in ")[2] for m in messages[2:]] == ["0.04 s", "0.08 s"]
    works = _claim_records(caplog)[-1]
    assert works.levelno == logging.WARNING
    assert re.fullmatch(r"claiming sessions works again after \d+ failures", works.getMessage())
    async with pt.open_session_store(postgres_url) as store, store.open_agent("s1") as agent:
        assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_a_renewal_outage_is_one_warning_then_the_recovery(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # renewals are retried every 0.5 s while they fail: one warning for the outage, the
    # retries at debug level
    caplog.set_level(logging.DEBUG, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)

    def renewal_records() -> list[logging.LogRecord]:
        return [r for r in caplog.records if "lease renewal" in r.getMessage()]

    async with (
        pt.open_session_store(postgres_url, lease_ttl=9) as store,  # renewed every 3 s
        store.open_agent("s") as agent,
    ):
        raw("ALTER TABLE pi_trio_sessions RENAME TO pi_trio_sessions_away")
        await until(lambda: len(renewal_records()) >= 3)  # the lease lasts 7.5 s from the last
        raw("ALTER TABLE pi_trio_sessions_away RENAME TO pi_trio_sessions")
        await until(lambda: "works again" in renewal_records()[-1].getMessage())
        assert not agent.is_running
    records = renewal_records()
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    retries = [r for r in records if r.levelno == logging.DEBUG]
    assert len(warnings) == 2, warnings
    assert re.fullmatch(
        r"session 's': lease renewal failed \(.*pi_trio_sessions.*\); retrying", warnings[0]
    ), warnings[0]
    assert (
        warnings[1] == f"session 's': lease renewal works again after {len(retries) + 1} failures"
    )
    assert len(retries) >= 2
