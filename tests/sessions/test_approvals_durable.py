"""Approvals that survive a restart: a waiting tool call is in the session log, decided from the
store in any process, and run exactly once when the session continues (DESIGN 9.4)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import pi_trio as pt
from pi_trio.testing import check_transcript

from ._approval_child import REFUND_CALL, SESSION, options

ROOT = Path(__file__).resolve().parents[2]


async def _busy(store: pt.SessionStore) -> bool:
    return any(info.pending or info.holder for info in await store.list_sessions())


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def _ask(store: pt.SessionStore, side: Path) -> None:
    async with store.open_agent(SESSION, **options(side, resumed=False)) as agent:
        await agent.prompt("refund order 17")
        assert [call.id for call in agent.state.pending_approvals] == [REFUND_CALL]


async def test_a_waiting_call_is_listed_decided_from_the_store_and_run_once(
    store_url: str, tmp_path: Path
) -> None:
    side = tmp_path / "side_effects"
    async with pt.open_session_store(store_url) as store:
        await _ask(store, side)
        listed = await store.pending_approvals()
        assert [(sid, call.id, call.name) for sid, call in listed] == [
            (SESSION, REFUND_CALL, "refund")
        ]
        assert [c.id for _, c in await store.pending_approvals(SESSION)] == [REFUND_CALL]
        await store.approve(SESSION, REFUND_CALL)
        assert await store.pending_approvals() == []
        with pytest.raises(KeyError, match="no tool call 'refund_1' waits"):
            await store.deny(SESSION, REFUND_CALL, "too late")
        with pytest.raises(KeyError, match="waits"):
            await store.approve(SESSION, "no_such_call")
        async with store.open_agent(SESSION, **options(side, resumed=True)) as agent:
            assert agent.state.awaiting_approval and agent.state.pending_approvals == ()
            await agent.continue_()
            messages = agent.state.messages
        assert _lines(side) == [f"{REFUND_CALL} 250"]
        assert check_transcript(messages) == []
        assert messages[-1].content[0].text == "refund handled"  # type: ignore[union-attr]
        async with store.open_agent(SESSION, **options(side, resumed=True)) as agent:
            assert not agent.state.awaiting_approval  # nothing waits, nothing runs again
        assert _lines(side) == [f"{REFUND_CALL} 250"]


async def test_a_deny_from_the_store_reaches_the_model_after_a_restart(
    store_url: str, tmp_path: Path
) -> None:
    side = tmp_path / "side_effects"
    async with pt.open_session_store(store_url) as store:
        await _ask(store, side)
        await store.deny(SESSION, REFUND_CALL, "the order was never paid")
        made = options(side, resumed=True)
        async with store.open_agent(SESSION, **made) as agent:
            await agent.continue_()
        context = made["stream_fn"].calls[-1].context
        result = next(m for m in context.messages if isinstance(m, pt.ToolResultMessage))
        assert result.is_error and "the order was never paid" in result.content[0].text  # type: ignore[union-attr]
        assert _lines(side) == []


async def test_the_holder_in_this_process_takes_a_store_decision_at_once(
    store_url: str, tmp_path: Path
) -> None:
    side = tmp_path / "side_effects"
    async with pt.open_session_store(store_url) as store:
        async with store.open_agent(SESSION, **options(side, resumed=False)) as agent:
            await agent.prompt("refund order 17")
            await store.approve(SESSION, REFUND_CALL)
            assert agent.state.pending_approvals == ()
            kinds = [entry.kind for entry in await store.load(SESSION)]
            assert kinds.count("approval") == 1 and kinds[-1] == "decision"  # durable already
            await agent.continue_()
        assert _lines(side) == [f"{REFUND_CALL} 250"]


async def test_a_sqlite_session_held_by_another_process_refuses_a_store_decision(
    tmp_path: Path,
) -> None:
    side, url = tmp_path / "side_effects", str(tmp_path / "s.db")
    async with pt.open_session_store(url) as store:
        await _ask(store, side)
    child = _start(url, side, "hold")
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "HOLDING"
        async with pt.open_session_store(url) as store:
            with pytest.raises(pt.SessionBusyError, match="decide there"):
                await store.approve(SESSION, REFUND_CALL)
            with pytest.raises(pt.SessionNotFoundError):
                await store.approve("nobody", REFUND_CALL)
    finally:
        child.kill()
        child.wait()


def _start(url: str, side: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.sessions._approval_child", url, str(side), mode],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _run(url: str, side: Path, mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.sessions._approval_child", url, str(side), mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
async def test_sigkill_while_waiting_then_resume_elsewhere_and_approve_from_a_third(
    store_url: str, tmp_path: Path
) -> None:
    """Process 1 asks and is SIGKILLed while the call waits; process 2 resumes the session
    (the call still waits: repair leaves it alone); this process, a third, approves; the
    refund then runs exactly once (PostgreSQL: in process 2, which holds the session and gets
    the decision through its inbox; SQLite: in a process 4, once process 2 let go)."""
    side = tmp_path / "side_effects"
    asker = _start(store_url, side, "ask")
    try:
        assert asker.stdout is not None
        assert asker.stdout.readline().split() == ["WAITING", REFUND_CALL]
        os.kill(asker.pid, signal.SIGKILL)
        asker.wait()
    finally:
        asker.kill()
    postgres = store_url.startswith("postgresql")
    if not postgres:
        assert _run(store_url, side, "show").split() == ["WAITING", REFUND_CALL]
    holder = _start(store_url, side, "hold") if postgres else None
    try:
        if holder is not None:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "HOLDING"
        async with pt.open_session_store(store_url) as store:
            listed = await store.pending_approvals()
            assert [(sid, call.id) for sid, call in listed] == [(SESSION, REFUND_CALL)]
            await store.approve(SESSION, REFUND_CALL)
        if holder is not None:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "DONE"
            assert holder.wait(timeout=60) == 0
        else:
            assert _run(store_url, side, "continue").strip() == "DONE"
    finally:
        if holder is not None:
            holder.kill()
    assert _lines(side) == [f"{REFUND_CALL} 250"]
    async with pt.open_session_store(store_url) as store:
        kinds = [entry.kind for entry in await store.load(SESSION)]
        assert kinds.count("approval") == 1 and kinds.count("decision") == 1
        assert await store.pending_approvals() == []


@pytest.mark.slow
async def test_a_worker_continues_a_session_approved_from_another_process(
    postgres_url: str, tmp_path: Path
) -> None:
    side = tmp_path / "side_effects"
    async with pt.open_session_store(postgres_url) as store, trio.open_nursery() as nursery:
        made = options(side, resumed=False)  # one script across the worker's claims
        await nursery.start(pt.serve_sessions, store, made)
        await store.enqueue(SESSION, "refund order 17")
        with trio.fail_after(30):
            while not await store.pending_approvals():  # noqa: ASYNC110 (the worker's work)
                await trio.sleep(0.05)
        await trio.sleep(0.3)  # the worker let the session go idle: nothing runs meanwhile
        assert _lines(side) == []
        code = (
            "import trio, pi_trio as pt, sys\n"
            "async def main():\n"
            "    async with pt.open_session_store(sys.argv[1]) as store:\n"
            f"        await store.approve({SESSION!r}, {REFUND_CALL!r})\n"
            "trio.run(main)\n"
        )
        with trio.fail_after(60):
            await trio.run_process([sys.executable, "-c", code, postgres_url])
        with trio.fail_after(30):
            while not _lines(side) or await _busy(store):  # noqa: ASYNC110 (the worker's)
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    assert _lines(side) == [f"{REFUND_CALL} 250"]
    async with (
        pt.open_session_store(postgres_url) as store,
        store.open_agent(SESSION, **options(side, resumed=True)) as agent,
    ):
        assert agent.state.messages[-1].content[0].text == "refund handled"  # type: ignore[union-attr]


async def test_pending_approvals_of_an_unknown_session_says_so(store_url: str) -> None:
    async with pt.open_session_store(store_url) as store:
        with pytest.raises(pt.SessionNotFoundError, match="no session 'nosuch'"):
            await store.pending_approvals("nosuch")
