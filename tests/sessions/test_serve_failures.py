"""``pt.serve_sessions`` while its database fails: the claims back off, the first failure is
logged with its traceback and the next ones in one line each, and the worker says when
claiming works again (and then runs what was queued)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ._helpers import IDLE, answering_options, calls, make_tool, until
from .conftest import Raw

pytestmark = pytest.mark.slow  # workers through database outages


def _claim_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("claiming sessions")]


def _saying(caplog: pytest.LogCaptureFixture, *phrases: str) -> list[logging.LogRecord]:
    """The records whose message has any of ``phrases``."""
    return [r for r in caplog.records if any(p in r.getMessage() for p in phrases)]


@contextmanager
def _away(raw: Raw, *tables: str) -> Iterator[None]:
    """An outage as the store sees it: ``tables`` renamed for the block, then put back."""
    for table in tables:
        raw(f"ALTER TABLE {table} RENAME TO {table}_away")
    try:
        yield
    finally:
        for table in tables:
            raw(f"ALTER TABLE {table}_away RENAME TO {table}")


async def test_failing_claims_back_off_and_log_one_traceback(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)
    options = answering_options()
    async with (
        pt.open_session_store(postgres_url, lease_ttl=5) as store,
        trio.open_nursery() as nursery,
    ):
        with _away(raw, "pi_trio_sessions"):  # claims now fail
            await nursery.start(lambda task_status: pt.serve_sessions(
                store, options, poll_interval=0.01, task_status=task_status
            ))  # fmt: skip
            await until(lambda: len(_claim_records(caplog)) >= 4)
            failed = _claim_records(caplog)[:4]
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

    async with (
        pt.open_session_store(postgres_url, lease_ttl=9) as store,  # renewed every 3 s
        store.open_agent("s") as agent,
    ):
        with _away(raw, "pi_trio_sessions"):
            await until(lambda: len(_saying(caplog, "lease renewal")) >= 3)  # lasts 7.5 s
        await until(lambda: "works again" in _saying(caplog, "lease renewal")[-1].getMessage())
        assert not agent.is_running
    records = _saying(caplog, "lease renewal")
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


async def test_a_lease_lost_in_an_outage_is_lines_not_tracebacks(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # the store goes away while a session's tool runs, for longer than its lease: the worker
    # stops the run (its lease would expire), cannot give the session back either, and says so
    # in one line each; once the store is back, the session is claimed again and repaired
    caplog.set_level(logging.DEBUG, logger="pi_trio")
    raw = Raw("postgresql", postgres_url)
    started = trio.Event()

    async def slow(tool_call_id: str, params: object, on_update: object) -> pt.ToolResult:
        started.set()
        await trio.sleep(60)
        return pt.ToolResult([pt.TextContent("ok")])

    model = faux.FauxModel([calls("slow"), faux.assistant_message("done")])
    tools = [make_tool("slow", slow)]
    options = {"initial_state": pt.AgentState(model=model.model, tools=tools), "stream_fn": model}

    async with (
        pt.open_session_store(postgres_url, lease_ttl=3) as store,
        trio.open_nursery() as nursery,
    ):
        await nursery.start(lambda task_status: pt.serve_sessions(
            store, options, poll_interval=0.05, task_status=task_status
        ))  # fmt: skip
        await store.enqueue("s1", "hello")
        with trio.fail_after(30):
            await started.wait()
        with _away(raw, "pi_trio_sessions", "pi_trio_inbox"):  # what renewals and moves read
            await until(lambda: any(  # the worker says the run ended (lost, or failed)
                r.name == "pi_trio.sessions" for r in _saying(caplog, "lost it", "it stays")
            ))  # fmt: skip
        await until(lambda: raw(IDLE) == [(True,)])  # claimed again, repaired, given back
        nursery.cancel_scope.cancel()
    ours = [r for r in caplog.records if r.name.startswith("pi_trio")]
    claims = [r for r in ours if r.getMessage().startswith("claiming sessions failed")]
    traced = [r for r in ours if r.exc_info is not None and r not in claims[:1]]
    assert traced == [], [r.getMessage() for r in traced]  # the first failed claim alone
    texts = [r.getMessage() for r in ours]
    assert not [t for t in texts if "Cancelled" in t or "ExceptionGroup" in t], texts
    worker = [r for r in _saying(caplog, "this holder lost it") if r.name == "pi_trio.sessions"]
    assert [r.levelno for r in worker] == [logging.WARNING]
    assert worker[0].getMessage().startswith("session 's1': this holder lost it (no renewal")
    gave_back = [t for t in texts if "could not give it back either" in t]
    assert len(gave_back) == 1 and gave_back[0].endswith("runs out by itself (within 3 s)")
    entries = await _entries(postgres_url, "s1")
    assert entries[-1].kind == "run_end" and entries[-1].data["repaired"] is True


async def _entries(url: str, session_id: str) -> list[pt.SessionEntry]:
    async with pt.open_session_store(url) as store:
        return await store.load(session_id)


async def test_an_inbox_that_cannot_be_read_is_a_line_per_renewal(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # the lease renews, but moving the inbox fails (tried again at each renewal): one line
    # each, no traceback, and the session goes on
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    raw = Raw("postgresql", postgres_url)

    async with (
        pt.open_session_store(postgres_url, lease_ttl=0.6) as store,  # renewed every 0.2 s
        store.open_agent("s") as agent,
    ):
        with _away(raw, "pi_trio_inbox"):
            await until(lambda: len(_saying(caplog, "moving its inbox failed")) >= 2)
        await store.enqueue("s", "after the outage")
        await until(lambda: len(agent.queued()) == 1)  # moved in at a later renewal
    records = _saying(caplog, "moving its inbox failed")
    assert [r.exc_info for r in records] == [None] * len(records)
    assert re.fullmatch(
        r"session 's': moving its inbox failed \(.*pi_trio_inbox.*\); trying again at the "
        r"next renewal",
        records[0].getMessage(),
    ), records[0].getMessage()
