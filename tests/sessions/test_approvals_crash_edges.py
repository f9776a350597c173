"""Approvals across a crash inside an approved call: the call ran (its intent is durable), so
a resumed session never runs it again (DESIGN 9.4: an approved ``replay="never"`` call runs
exactly once)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import pi_trio as pt
from pi_trio.testing import check_transcript

from ._approval_child import REFUND_CALL, SESSION, options

ROOT = Path(__file__).resolve().parents[2]


def _start(url: str, side: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.sessions._approval_crash_child", url, str(side)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.slow
async def test_a_crash_inside_an_approved_call_does_not_run_it_again(
    store_url: str, tmp_path: Path
) -> None:
    side, url = tmp_path / "side_effects", store_url
    async with pt.open_session_store(url) as store:
        async with store.open_agent(SESSION, **options(side, resumed=False)) as agent:
            await agent.prompt("refund order 17")
        await store.approve(SESSION, REFUND_CALL)
    child = _start(url, side)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "RAN"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        child.kill()
    assert side.read_text().splitlines() == [f"{REFUND_CALL} 250"]
    async with pt.open_session_store(url, lease_ttl=2.0) as store:
        assert await store.pending_approvals() == []
        async with store.open_agent(SESSION, wait=True, **options(side, resumed=True)) as agent:
            assert not agent.state.awaiting_approval  # it ran: its outcome is unknown
            result = next(m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage))
            assert result.is_error and result.details["interrupted"] == "outcome_unknown"  # type: ignore[index]
            assert check_transcript(agent.state.messages) == []
            await agent.prompt("go on")  # the repaired run is closed: a new one
    assert side.read_text().splitlines() == [f"{REFUND_CALL} 250"]  # exactly once
