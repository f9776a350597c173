"""``pt.serve_sessions`` and ``pi-trio worker``: a pool of workers on one PostgreSQL store runs
every session with queued input until idle, and survives a worker's SIGKILL."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.cli import main
from pi_trio.providers import faux
from pi_trio.testing import check_transcript

from .conftest import Raw

pytestmark = pytest.mark.slow  # worker processes and several workers on PostgreSQL

ROOT = Path(__file__).resolve().parents[2]


def _echo(context: pt.Context, options: Any, index: int) -> pt.AssistantMessage:
    last = context.messages[-1]
    said = last.content[0].text if isinstance(last, pt.UserMessage) else "?"  # type: ignore[union-attr]
    return faux.assistant_message(f"answer to {said}")


def _busy(raw: Raw, *, inbox: bool = True) -> int:
    """Sessions not yet idle: pending, held, or (``inbox``) with inbox rows."""
    ((count,),) = raw(
        "SELECT count(*) FROM pi_trio_sessions WHERE pending OR holder IS NOT NULL"
        + (" OR session_id IN (SELECT session_id FROM pi_trio_inbox)" if inbox else "")
    )
    return int(count)


async def _wait_idle(raw: Raw, seconds: float, *, inbox: bool = True) -> float:
    started = time.monotonic()
    with trio.fail_after(seconds):
        while _busy(raw, inbox=inbox):  # noqa: ASYNC110 (other processes' work)
            await trio.sleep(0.1)
    return time.monotonic() - started


def _echo_options() -> dict[str, Any]:
    """Agent options whose model answers every message with ``answer to <its text>``."""
    model = faux.FauxModel(itertools.repeat(_echo))
    return {"initial_state": pt.AgentState(model=model.model), "stream_fn": model}


async def _serve_until_idle(
    store: pt.SessionStore, options: Any, raw: Raw, *, inbox: bool = True, then: float = 0.0
) -> None:
    """A worker in this process until every session is idle (``inbox``: and no inbox row is
    left), and ``then`` seconds more; then its graceful shutdown."""
    async with trio.open_nursery() as nursery:
        await nursery.start(pt.serve_sessions, store, options)
        await _wait_idle(raw, 10, inbox=inbox)
        await trio.sleep(then)
        nursery.cancel_scope.cancel()


async def _check_sessions(
    store: pt.SessionStore, prompts: dict[str, list[str]], *, answered: bool = True
) -> list[int]:
    """Every session idle with a valid transcript, each prompt in it once, epochs in blocks;
    the number of leases each session took."""
    leases = []
    for session_id, said in prompts.items():
        entries = await store.load(session_id)
        assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
        epochs = [e.epoch for e in entries]
        assert epochs == sorted(epochs), f"{session_id}: two holders interleaved: {epochs}"
        leases.append(len(set(epochs)))
        assert entries[-1].kind == "run_end", session_id
        async with store.open_agent(session_id) as agent:
            messages = agent.state.messages
            assert check_transcript(messages) == [], session_id
            assert not agent.has_queued_messages()
        users = [m.content[0].text for m in messages if isinstance(m, pt.UserMessage)]  # type: ignore[union-attr]
        assert sorted(users) == sorted(said), session_id  # none lost, none twice
        if answered:
            texts = [
                m.content[0].text  # type: ignore[union-attr]
                for m in messages
                if isinstance(m, pt.AssistantMessage) and m.content
            ]
            assert sorted(texts) == sorted(f"answer to {p}" for p in said), session_id
    return leases


async def test_a_worker_runs_every_session_with_input_until_idle(postgres_url: str) -> None:
    raw = Raw("postgresql", postgres_url)
    model = faux.FauxModel(itertools.repeat(_echo), token_delay=0.001)
    options = {"initial_state": pt.AgentState(model=model.model), "stream_fn": model}
    prompts = {f"s{i}": [f"s{i} one", f"s{i} two"] for i in range(12)}
    async with pt.open_session_store(postgres_url, lease_ttl=2) as store:
        for session_id, (first, _) in prompts.items():
            await store.enqueue(session_id, first)
        async with trio.open_nursery() as nursery:
            await nursery.start(lambda task_status: pt.serve_sessions(
                store, options, concurrency=3, poll_interval=0.2, task_status=task_status
            ))  # fmt: skip
            for session_id, (_, second) in prompts.items():
                await store.enqueue(session_id, second, kind="steer")
            await _wait_idle(raw, 30)
            nursery.cancel_scope.cancel()
        assert await _check_sessions(store, prompts)
        assert raw("SELECT count(*) FROM pi_trio_sessions WHERE holder IS NOT NULL") == [(0,)]
        await store.enqueue("late", "late one")  # a worker started later finds it
        async with trio.open_nursery() as nursery:
            await nursery.start(lambda task_status: pt.serve_sessions(
                store, options, concurrency=1, task_status=task_status
            ))  # fmt: skip
            await _wait_idle(raw, 30)
            nursery.cancel_scope.cancel()
        assert await _check_sessions(store, {"late": ["late one"]})


async def test_a_worker_shut_down_mid_run_leaves_the_rest_to_another(postgres_url: str) -> None:
    raw = Raw("postgresql", postgres_url)
    slow = faux.FauxModel(itertools.repeat(_echo), token_delay=0.3)
    prompts = {f"s{i}": [f"s{i} one", f"s{i} two"] for i in range(8)}
    async with pt.open_session_store(postgres_url, lease_ttl=5) as store:
        for session_id, said in prompts.items():
            for text in said:
                await store.enqueue(session_id, text)
        options = {"initial_state": pt.AgentState(model=slow.model), "stream_fn": slow}
        async with trio.open_nursery() as nursery:
            await nursery.start(pt.serve_sessions, store, options)
            await trio.sleep(0.5)  # every session's first run under way
            nursery.cancel_scope.cancel()  # the graceful shutdown
        assert raw("SELECT count(*) FROM pi_trio_sessions WHERE holder IS NOT NULL") == [(0,)]
        assert _busy(raw) == 8  # released at once, their input left pending
        fast = faux.FauxModel(itertools.repeat(_echo))
        options = {"initial_state": pt.AgentState(model=fast.model), "stream_fn": fast}
        async with trio.open_nursery() as nursery:
            await nursery.start(pt.serve_sessions, store, options)
            await _wait_idle(raw, 30)  # no lease to wait for
            nursery.cancel_scope.cancel()
        assert await _check_sessions(store, prompts, answered=False)


async def test_serve_sessions_needs_a_postgresql_store(tmp_path: Path) -> None:
    async with pt.open_session_store(tmp_path / "a.db") as store:
        with pytest.raises(TypeError, match="needs a PostgreSQL store"):
            await pt.serve_sessions(store, {})


async def test_the_worker_freezes_what_it_loaded_once_it_serves(postgres_url: str) -> None:
    # many sessions at once: full collections must not walk the modules and the pool each time
    import gc

    from pi_trio.cli._agents import agent_factory
    from pi_trio.cli._worker import serve_worker

    gc.unfreeze()
    try:
        async with trio.open_nursery() as nursery:
            make_agent = agent_factory("faux", token_delay=0)
            description = await nursery.start(serve_worker, postgres_url, make_agent, 5.0, 2)
            frozen = gc.get_freeze_count()
            nursery.cancel_scope.cancel()
    finally:
        gc.unfreeze()
    assert "postgresql" in description
    assert frozen > 1000


@contextlib.contextmanager
def _serving_worker(url: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A ``pi-trio worker`` process that serves by now; killed on the way out."""
    worker = _worker(url, log)
    try:
        deadline = time.monotonic() + 60
        while "serving" not in log.read_text():
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield worker
    finally:
        worker.kill()
        worker.wait()


def _worker(url: str, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "pi_trio", "worker", "--store", url, "--lease-ttl", "2"]
    with open(log, "ab") as out:
        return subprocess.Popen(
            [*command, "--concurrency", "10", "--delay", "0.01"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def test_three_workers_survive_a_sigkill_of_one(postgres_url: str, tmp_path: Path) -> None:
    """The done-when test: 300 sessions with queued prompts, three `pi-trio worker`
    processes, one killed with SIGKILL mid-way; the other two finish its sessions."""
    raw = Raw("postgresql", postgres_url)
    prompts = {f"s{i:03}": [f"please compute {i} + 1", f"and then {i} * 2"] for i in range(300)}
    async with pt.open_session_store(postgres_url, lease_ttl=2) as store:
        for session_id, said in prompts.items():
            for text in said:
                await store.enqueue(session_id, text)
        logs = [tmp_path / f"worker{i}.log" for i in range(3)]
        workers = [_worker(postgres_url, log) for log in logs]
        try:
            with trio.fail_after(120):
                while _busy(raw) > 200:  # noqa: ASYNC110 (other processes' work)
                    await trio.sleep(0.05)
            held = raw(
                "SELECT count(*) FROM pi_trio_sessions WHERE holder LIKE %s", f"%:{workers[0].pid}"
            )
            os.kill(workers[0].pid, signal.SIGKILL)
            killed_at = time.monotonic()
            workers[0].wait()
            await _wait_idle(raw, 120)
            took = time.monotonic() - killed_at
        finally:
            for worker in workers[1:]:
                worker.send_signal(signal.SIGTERM)
            statuses = [worker.wait(timeout=30) for worker in workers[1:]]
        assert statuses == [0, 0], [log.read_text()[-2000:] for log in logs]
        assert held[0][0] > 0  # it was killed while holding sessions
        leases = await _check_sessions(store, prompts, answered=False)
        taken_over = sum(n > 1 for n in leases)
        print(f"killed holding {held[0][0]}; {taken_over} taken over; idle {took:.1f} s after")
        assert max(leases) >= 2  # a session the killed worker held was taken over
        repaired = raw(
            "SELECT count(*) FROM pi_trio_entries WHERE kind = 'run_end' AND data::text LIKE ?",
            "%repaired%",
        )
        assert repaired[0][0] >= 1  # ...and its interrupted run was closed by the next holder
        assert took < 2 + 30, took  # lease expiry plus the remaining work (a loaded machine)


async def test_a_session_whose_options_fail_is_given_back_and_the_rest_run(
    postgres_url: str,
) -> None:
    raw = Raw("postgresql", postgres_url)
    model = faux.FauxModel(itertools.repeat(_echo))

    def options(session_id: str) -> dict[str, Any]:
        if session_id == "bad":
            raise RuntimeError("no agent for you")
        return {"initial_state": pt.AgentState(model=model.model), "stream_fn": model}

    async with pt.open_session_store(postgres_url, lease_ttl=30) as store:
        await store.enqueue("bad", "hello")
        await store.enqueue("good", "good one")
        async with trio.open_nursery() as nursery:
            await nursery.start(pt.serve_sessions, store, options)
            await _wait_idle(raw, 10, inbox=False)  # "bad" given back at once, not in 30 s
            nursery.cancel_scope.cancel()
        assert await _check_sessions(store, {"good": ["good one"]})
    assert raw("SELECT count(*) FROM pi_trio_inbox WHERE session_id = 'bad'") == [(1,)]


def test_a_second_signal_ends_a_worker_whose_shutdown_hangs(
    postgres_url: str, tmp_path: Path
) -> None:
    # a database that stops answering (here: a lock the worker's next claim waits on) blocks
    # the graceful shutdown; the second SIGTERM then ends the process at once
    import psycopg

    log = tmp_path / "worker.log"
    with _serving_worker(postgres_url, log) as worker, psycopg.connect(postgres_url) as locker:
        locker.execute("LOCK TABLE pi_trio_sessions IN ACCESS EXCLUSIVE MODE")
        while not Raw("postgresql", postgres_url)(
            "SELECT count(*) FROM pg_locks WHERE NOT granted"
        )[0][0]:
            time.sleep(0.05)  # the worker's claim waits for the lock now
        worker.send_signal(signal.SIGTERM)
        assert worker.poll() is None  # a graceful shutdown, waiting on the lock
        for _ in range(100):  # again until one is taken as the second (two may merge)
            worker.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(timeout=0.2)
                break
        status = worker.wait(timeout=10)  # before: waits for the lock, which never goes
    assert status == -signal.SIGTERM, log.read_text()
    assert log.read_text().endswith("pi-trio: interrupted again; exiting now\n")


def test_ctrl_c_stops_a_serving_worker_gracefully_with_130(
    postgres_url: str, tmp_path: Path
) -> None:
    # as every pi-trio command ends on Ctrl-C; SIGTERM (a supervisor's stop) ends it with 0
    log = tmp_path / "worker.log"
    with _serving_worker(postgres_url, log) as worker:
        worker.send_signal(signal.SIGINT)
        status = worker.wait(timeout=30)
    assert status == 130, log.read_text()
    lines = log.read_text().splitlines()
    assert lines[-2:] == [lines[-2], "pi-trio: interrupted"], lines
    assert lines[-2].startswith("pi-trio worker: serving postgresql://"), lines


async def test_a_session_whose_log_cannot_be_read_is_set_aside_and_says_so(
    postgres_url: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log that cannot be read sets a session aside: a line names it, and ``pi-trio
    sessions list`` shows it, with its inbox kept."""
    raw = Raw("postgresql", postgres_url)
    options = _echo_options()
    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("bad", "hello")
        raw(
            "INSERT INTO pi_trio_entries (session_id, seq, kind, data, time, epoch, version) "
            "VALUES ('bad', 1, 'telepathy', '{}', 0, 0, 1)"
        )
        await _serve_until_idle(store, options, raw, inbox=False)
        [info] = await store.list_sessions()
    assert (info.pending, info.queued, info.set_aside) == (False, 1, True)
    failed = [r for r in caplog.records if "session 'bad' failed" in r.getMessage()]
    assert len(failed) == 1 and "unknown entry kind 'telepathy'" in str(failed[0].exc_info[1])
    command = ["sessions", "--store", postgres_url, "list"]
    assert await trio.to_thread.run_sync(main, command) == 0  # its own trio.run, in a thread
    listed = capsys.readouterr().out
    assert "1 queued, SET ASIDE: it failed (new input retries it)" in listed


async def test_a_session_that_fails_is_set_aside_not_claimed_again_at_once(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    raw = Raw("postgresql", postgres_url)
    options = _echo_options()
    options["no_such_option"] = 1  # Agent() refuses it: a TypeError, every time
    async with pt.open_session_store(postgres_url, lease_ttl=30) as store:
        await store.enqueue("bad", "hello")
        # before: claimed again and again, also in the half second after it went idle
        await _serve_until_idle(store, options, raw, inbox=False, then=0.5)
        [info] = await store.list_sessions()
    failed = [r for r in caplog.records if "session 'bad' failed" in r.getMessage()]
    assert len(failed) == 1 and "set aside until new input comes" in failed[0].getMessage()
    assert info.set_aside


async def test_a_decision_row_that_is_not_an_object_is_logged_ignored_and_deleted(
    postgres_url: str,
) -> None:
    raw = Raw("postgresql", postgres_url)
    options = _echo_options()
    async with pt.open_session_store(postgres_url, lease_ttl=30) as store:
        await store.enqueue("s", "hello")
        raw(
            "INSERT INTO pi_trio_inbox (session_id, kind, data, time) "
            "VALUES ('s', 'decision', '[1, 2]', 1)"
        )
        await _serve_until_idle(store, options, raw)  # the inbox emptied: the odd row too
        entries = await store.load("s")
    ignored = [e.data for e in entries if e.kind == "decision"]
    assert [(d["data"], d["ignored"]) for d in ignored] == [([1, 2], True)]
    assert "answer to hello" in str([e.data for e in entries if e.kind == "message"])


async def test_an_enqueued_message_of_a_type_the_worker_does_not_know_is_set_aside_alone(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # a front end registered its own message type and enqueued one; this worker did not
    raw = Raw("postgresql", postgres_url)
    options = _echo_options()
    ticket = {"role": "ticket", "body": "printer on fire", "timestamp": 1}
    async with pt.open_session_store(postgres_url, lease_ttl=30) as store:
        await store.enqueue("s", "first")
        raw(
            "INSERT INTO pi_trio_inbox (session_id, kind, data, time) "
            "VALUES ('s', 'follow_up', ?::json, 1)",
            json.dumps(ticket),
        )
        await store.enqueue("s", "after the ticket")
        await _serve_until_idle(store, options, raw)  # before: the ticket held it up for good
        entries = await store.load("s")
        async with store.open_agent("s", **options) as resumed:  # its log reads back
            assert resumed.state.messages[-1].role == "assistant"
    (ignored,) = [e.data for e in entries if e.kind == "inbox_ignored"]
    assert (ignored["row"], ignored["data"]) == ("follow_up", ticket)
    assert "not a message this process reads" in ignored["why"]
    said = str([e.data for e in entries if e.kind == "message"])
    assert "answer to first" in said and "answer to after the ticket" in said
    warned = [r for r in caplog.records if "logged as inbox_ignored" in r.getMessage()]
    assert len(warned) == 1


@pytest.mark.parametrize(
    "data",
    [
        '{"role": "user", "content": "x", "timestamp": 1' + "0" * 5_000 + "}",  # over 4,300 digits
        '{"role": "user", "content": ' + "[" * 12_000 + "]" * 12_000 + ', "timestamp": 1}',
    ],
    ids=["huge-number", "deep"],
)
async def test_an_inbox_row_python_cannot_read_is_logged_ignored_alone(
    postgres_url: str, data: str
) -> None:
    """JSON PostgreSQL takes and Python's parser refuses (before: the session was set aside,
    and every later message with it)."""
    raw = Raw("postgresql", postgres_url)
    options = _echo_options()
    async with pt.open_session_store(postgres_url, lease_ttl=30) as store:
        await store.enqueue("s", "first")
        raw(
            "INSERT INTO pi_trio_inbox (session_id, kind, data, time) "
            "VALUES ('s', 'follow_up', ?::json, 1)",
            data,
        )
        await store.enqueue("s", "after the odd row")
        await _serve_until_idle(store, options, raw)
        entries = await store.load("s")
    (ignored,) = [e.data for e in entries if e.kind == "inbox_ignored"]
    assert ignored["data"] == data and "not JSON this process reads" in ignored["why"]
    said = str([e.data for e in entries if e.kind == "message"])
    assert "answer to first" in said and "answer to after the odd row" in said


async def test_input_that_comes_while_a_failing_session_is_held_is_claimed_again(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # the worker gives up on what it claimed, not on a message enqueued after its claim
    raw = Raw("postgresql", postgres_url)
    good = _echo_options()
    calls = []

    def options(session_id: str) -> dict[str, Any]:
        calls.append(session_id)
        if len(calls) == 1:  # enqueued while this worker holds the session, then it fails
            raw(
                "INSERT INTO pi_trio_inbox (session_id, kind, data, time) VALUES "
                "('s', 'follow_up', ?::json, 1)",
                json.dumps(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "meanwhile"}],
                        "timestamp": 1,
                    }
                ),
            )
            raise RuntimeError("options not ready yet")
        return good

    async with pt.open_session_store(postgres_url, lease_ttl=30) as store:
        await store.enqueue("s", "hello")
        await _serve_until_idle(store, options, raw)  # before: set aside with 2 queued
        [info] = await store.list_sessions()
        entries = await store.load("s")
    assert (len(calls), info.queued, info.set_aside) == (2, 0, False)
    said = str([e.data for e in entries if e.kind == "message"])
    assert "answer to hello" in said and "answer to meanwhile" in said
